//go:build !purego

#include "textflag.h"
#include "xxh3_amd64.h"

// Offsets into avx2Keys (blocks64_amd64.go).
#define K_ACC 256
#define K_MASK 288
#define K_PRIME 320
#define K_PRIMEHI 352
#define K_BITFLIP1 384
#define K_BITFLIP2 392
#define K_PRIMESCALAR 400

// MULFOLD adds mulFold(word 2m ^ key KA, word 2m+1 ^ key KB) of four
// blocks to the accumulators in Y12, where OFF = 16m is the byte offset
// of the word pair in a block. The four blocks start at R8, R8+R9,
// R8+2*R9 and R8+R11 (R11 = 3*R9); lane j of every vector belongs to
// block j.
#define MULFOLD(OFF, KA, KB) \
	VMOVDQU     OFF(R8), X0; \
	VINSERTI128 $1, OFF(R8)(R9*2), Y0, Y0; \
	VMOVDQU     OFF(R8)(R9*1), X1; \
	VINSERTI128 $1, OFF(R8)(R11*1), Y1, Y1; \
	VPUNPCKLQDQ Y1, Y0, Y2; \
	VPUNPCKHQDQ Y1, Y0, Y3; \
	VPXOR       KA(BX), Y2, Y2; \
	VPXOR       KB(BX), Y3, Y3; \
	MULFOLD4; \
	VPADDQ      Y9, Y12, Y12

#define STEP(H, OFF) CHAINSTEP(H, OFF(SI), K_BITFLIP1(BX), K_BITFLIP2(BX), K_PRIMESCALAR(BX))

// HASH4 hashes the four blocks at R8 into Y2 and stores them at (DI).
// The avalanche's 64-bit multiply, too, comes from 32-bit halves:
// x*P mod 2^64 = x0*P0 + (x1*P0 + x0*P1)<<32, with Y14 = P, Y13 = P>>32.
#define HASH4 \
	VMOVDQU  K_ACC(BX), Y12; \
	MULFOLD(0, 0, 32); \
	MULFOLD(48, 64, 96); \
	MULFOLD(16, 128, 160); \
	MULFOLD(32, 192, 224); \
	VPSRLQ   $37, Y12, Y0; \
	VPXOR    Y0, Y12, Y12; \
	VPSRLQ   $32, Y12, Y1; \
	VPMULUDQ Y14, Y12, Y2; \
	VPMULUDQ Y14, Y1, Y3; \
	VPMULUDQ Y13, Y12, Y4; \
	VPADDQ   Y4, Y3, Y3; \
	VPSLLQ   $32, Y3, Y3; \
	VPADDQ   Y3, Y2, Y2; \
	VPSRLQ   $32, Y2, Y3; \
	VPXOR    Y3, Y2, Y2; \
	VMOVDQU  Y2, (DI)

// CHAIN4 extends the chain over the four local hashes in Y11 and stores
// their sequence hashes at (SI).
#define CHAIN4 \
	VMOVQ        X11, R12; \
	STEP(R12, 0); \
	VPEXTRQ      $1, X11, R12; \
	STEP(R12, 8); \
	VEXTRACTI128 $1, Y11, X10; \
	VMOVQ        X10, R12; \
	STEP(R12, 16); \
	VPEXTRQ      $1, X10, R12; \
	STEP(R12, 24); \
	ADDQ         $32, SI

// func hashBlocks64x4(l, sq *uint64, tokens *uint32, strideBytes, groups uintptr, keys *avx2Keys, chainLo uint64) uint64
//
// The chain runs one group behind the hashing: in program order, group
// g+1's hashes come before group g's chain steps, so the processor has
// them ready (and the vector units busy) while the chain waits on itself.
TEXT ·hashBlocks64x4(SB), NOSPLIT, $0-64
	MOVQ l+0(FP), DI
	MOVQ sq+8(FP), SI
	MOVQ tokens+16(FP), R8
	MOVQ strideBytes+24(FP), R9
	MOVQ groups+32(FP), CX
	MOVQ keys+40(FP), BX
	MOVQ chainLo+48(FP), R10
	LEAQ (R9)(R9*2), R11
	VMOVDQU K_MASK(BX), Y15
	VMOVDQU K_PRIME(BX), Y14
	VMOVDQU K_PRIMEHI(BX), Y13
	TESTQ CX, CX
	JZ    done
	TESTQ SI, SI
	JZ    blocksonly

	HASH4
	VMOVDQA Y2, Y11
	DECQ    CX
	JZ      last

chained:
	ADDQ $32, DI
	LEAQ (R8)(R9*4), R8
	HASH4
	CHAIN4
	VMOVDQA Y2, Y11
	DECQ    CX
	JNZ     chained

last:
	CHAIN4
	JMP done

blocksonly:
	HASH4
	ADDQ $32, DI
	LEAQ (R8)(R9*4), R8
	DECQ CX
	JNZ  blocksonly

done:
	VZEROUPPER
	MOVQ R10, ret+56(FP)
	RET
