//go:build !purego

#include "textflag.h"

// func commonPrefixAVX2(a, b *uint64, n int) int
// n >= 8. Eight elements a step (two 4-lane compares), then the last
// eight; at the first step with a difference, its first unequal lane.
TEXT ·commonPrefixAVX2(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	XORQ AX, AX

eight:
	LEAQ 8(AX), DX
	CMPQ DX, CX
	JA   tail

compare:
	// Elements AX to DX (= AX+8).
	VMOVDQU  (SI)(AX*8), Y0
	VMOVDQU  32(SI)(AX*8), Y1
	VPCMPEQQ (DI)(AX*8), Y0, Y0
	VPCMPEQQ 32(DI)(AX*8), Y1, Y1
	VPAND    Y0, Y1, Y2
	VPMOVMSKB Y2, BX
	CMPL BX, $0xffffffff
	JNE  differ8
	MOVQ DX, AX
	JMP  eight

differ8:
	// The difference is in the first four lanes (Y0) or, those all
	// equal, in the next four (Y1).
	VPMOVMSKB Y0, BX
	NOTL BX
	TESTL BX, BX
	JNZ  lane
	VPMOVMSKB Y1, BX
	NOTL BX
	ADDQ $4, AX

lane:
	// BX has a bit set for each byte of an unequal lane: the first set
	// bit's byte, over eight, is the lane.
	BSFL BX, BX
	SHRL $3, BX
	ADDQ BX, AX
	JMP  done

tail:
	// Fewer than eight left, all before them equal: compare the last
	// eight (n >= 8), which overlap elements known equal, so the first
	// unequal lane among them is the first unequal element. All equal,
	// AX becomes n and the next step ends the loop.
	CMPQ AX, CX
	JEQ  done
	LEAQ -8(CX), AX
	MOVQ CX, DX
	JMP  compare

done:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET
