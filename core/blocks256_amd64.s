//go:build !purego

#include "textflag.h"
#include "xxh3_amd64.h"

// Offsets into avx2LongKeys (blocks256_amd64.go).
#define L_SECRET 0
#define L_INIT 192
#define L_MASK 256
#define L_LENACC 288
#define L_BITFLIP1 296
#define L_BITFLIP2 304
#define L_PRIME 312

// STRIPE is XXH3's 64-byte stripe accumulation over the block at R8:
// data words at byte DOFF, secret words at byte SOFF, accumulators in
// Y0 (words 0-3) and Y1 (words 4-7). Per word i: k = data ^ secret,
// acc[i] += lo32(k) * hi32(k), acc[i^1] += data.
#define STRIPE(DOFF, SOFF) \
	VMOVDQU  DOFF(R8), Y2; \
	VMOVDQU  DOFF+32(R8), Y3; \
	VPXOR    SOFF(BX), Y2, Y4; \
	VPXOR    SOFF+32(BX), Y3, Y5; \
	VPSRLQ   $32, Y4, Y6; \
	VPSRLQ   $32, Y5, Y7; \
	VPMULUDQ Y6, Y4, Y4; \
	VPMULUDQ Y7, Y5, Y5; \
	VPSHUFD  $0x4e, Y2, Y2; \
	VPSHUFD  $0x4e, Y3, Y3; \
	VPADDQ   Y2, Y0, Y0; \
	VPADDQ   Y3, Y1, Y1; \
	VPADDQ   Y4, Y0, Y0; \
	VPADDQ   Y5, Y1, Y1

#define STEP(H) CHAINSTEP(H, (SI), L_BITFLIP1(BX), L_BITFLIP2(BX), L_PRIME(BX))

// func hashBlocks256(l, sq *uint64, tokens *uint32, strideBytes, n uintptr, keys *avx2LongKeys, chainLo uint64) uint64
TEXT ·hashBlocks256(SB), NOSPLIT, $0-64
	MOVQ l+0(FP), DI
	MOVQ sq+8(FP), SI
	MOVQ tokens+16(FP), R8
	MOVQ strideBytes+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ keys+40(FP), BX
	MOVQ chainLo+48(FP), R10
	VMOVDQU L_MASK(BX), Y15
	TESTQ CX, CX
	JZ    done

loop:
	// XXH3's long path for 256 bytes: three stripes from the start, with
	// the secret advancing 8 bytes a stripe, and the last 64 bytes with
	// the secret at byte 121 (no scramble: 256 bytes never fill a
	// 1,024-byte XXH3 block).
	VMOVDQU L_INIT(BX), Y0
	VMOVDQU L_INIT+32(BX), Y1
	STRIPE(0, 0)
	STRIPE(64, 8)
	STRIPE(128, 16)
	STRIPE(192, 121)

	// Merge: 256*prime64_1 + sum of mulFold(acc[2i] ^ s, acc[2i+1] ^ s')
	// over the secret from byte 11, the four folds side by side in
	// 32-bit halves, then the sum.
	VPXOR       11(BX), Y0, Y0
	VPXOR       43(BX), Y1, Y1
	VPUNPCKLQDQ Y1, Y0, Y2
	VPUNPCKHQDQ Y1, Y0, Y3
	MULFOLD4
	VEXTRACTI128 $1, Y9, X10
	VPADDQ      X10, X9, X9
	VPSHUFD     $0x4e, X9, X10
	VPADDQ      X10, X9, X9
	VMOVQ       X9, R12
	ADDQ        L_LENACC(BX), R12

	// Avalanche.
	MOVQ  R12, DX
	SHRQ  $37, DX
	XORQ  DX, R12
	IMULQ L_PRIME(BX), R12
	MOVQ  R12, DX
	SHRQ  $32, DX
	XORQ  DX, R12
	MOVQ  R12, (DI)

	TESTQ SI, SI
	JZ    next
	STEP(R12)
	ADDQ  $8, SI

next:
	ADDQ $8, DI
	ADDQ R9, R8
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	MOVQ R10, ret+56(FP)
	RET
