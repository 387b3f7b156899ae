// Shared by blocks64_amd64.s and blocks256_amd64.s: XXH3's 128-bit
// multiply-fold on four lanes at once, and the sequence chain's step.

// MULFOLD4 sets Y9 to mulFold(a, b) = hi ^ lo of the 128-bit product of
// each 64-bit lane of a = Y2 and b = Y3. AVX2 multiplies only 32x32->64
// bits per lane, so the product is built from four partial products:
// lo = p00 + (p01+p10)<<32, hi = p11 + p01>>32 + p10>>32 + the carry out
// of the middle 32 bits. Needs Y15 = 0x00000000ffffffff in every lane;
// uses Y2-Y9.
#define MULFOLD4 \
	VPSRLQ   $32, Y2, Y4; \
	VPSRLQ   $32, Y3, Y5; \
	VPMULUDQ Y3, Y2, Y6; \
	VPMULUDQ Y5, Y2, Y7; \
	VPMULUDQ Y3, Y4, Y8; \
	VPMULUDQ Y5, Y4, Y9; \
	VPSRLQ   $32, Y6, Y2; \
	VPAND    Y15, Y7, Y3; \
	VPADDQ   Y3, Y2, Y2; \
	VPAND    Y15, Y8, Y3; \
	VPADDQ   Y3, Y2, Y2; \
	VPSRLQ   $32, Y7, Y7; \
	VPSRLQ   $32, Y8, Y8; \
	VPADDQ   Y7, Y9, Y9; \
	VPADDQ   Y8, Y9, Y9; \
	VPSRLQ   $32, Y2, Y3; \
	VPADDQ   Y3, Y9, Y9; \
	VPSLLQ   $32, Y2, Y2; \
	VPBLENDD $0x55, Y6, Y2, Y2; \
	VPXOR    Y2, Y9, Y9

// CHAINSTEP extends the sequence chain by the local hash in register H
// (ChainStep, written out) and stores the new sequence hash at DST.
// BITFLIP1, BITFLIP2 and PRIME are memory operands holding the chain's
// BaseSeed keys and the avalanche prime. R10 carries the previous sequence
// hash already xored with bitflip1, which takes one operation off the
// path each step waits for: that path (MULQ, the fold, the avalanche) is
// what bounds the loops. Uses AX, DX, R13; H is clobbered.
#define CHAINSTEP(H, DST, BITFLIP1, BITFLIP2, PRIME) \
	XORQ   BITFLIP2, H; \
	MOVQ   R10, R13; \
	BSWAPQ R13; \
	ADDQ   H, R13; \
	ADDQ   $16, R13; \
	MOVQ   R10, AX; \
	MULQ   H; \
	XORQ   DX, AX; \
	ADDQ   R13, AX; \
	MOVQ   AX, DX; \
	SHRQ   $37, DX; \
	XORQ   DX, AX; \
	IMULQ  PRIME, AX; \
	MOVQ   AX, DX; \
	SHRQ   $32, DX; \
	MOVQ   AX, R10; \
	XORQ   BITFLIP1, R10; \
	XORQ   DX, R10; \
	XORQ   DX, AX; \
	MOVQ   AX, DST
