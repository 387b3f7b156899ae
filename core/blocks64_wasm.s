//go:build wasm && !purego

#include "textflag.h"

// hashBlocks64BGo (blocks64.go) in WebAssembly; blocks64_wasm.go says why.
// The arithmetic is xxh3_fixed.go's: mulFold, finalize and hash16.
//
// Written for what a WebAssembly compiler (wazero's, V8's) makes of it:
//
//   - Every value lives in a local (R0..R15, and PC_B below) or on the
//     operand stack: nothing goes through Go's stack in the loop.
//   - A runtime without guard pages checks the bounds of every load and
//     store, except a load whose address is the same i32 value as an
//     earlier, already checked one with a higher offset. Go's assembler
//     gives a function two i32 locals: SP and PC_B, the resume point Go's
//     wasm functions take as their parameter, which only a function that
//     calls others reads. So PC_B holds the current block's address (one
//     check for its eight words), and everything else the loop reads (the
//     keys, passed by value, and the constants, stored in the frame) is at
//     a fixed offset from SP (one check per iteration, by the first load,
//     the highest: k_7).
//   - Constants are loaded from the frame rather than written as
//     I64Const: a compiler materialises a 64-bit immediate with one more
//     instruction at every use, where a load folds into the instruction
//     that uses it.

#define LEN64ACC $0x8dde6c617af2a1c0  // 64 * prime64_1, the accumulator of a 64-byte input
#define AVALANCHE $0x165667919E3779F9
#define BITFLIP1 $0x6782737bea423ef2  // baseKeys.bitflip1 (the chain uses BaseSeed)
#define BITFLIP2 $0xaf56bc3b09964d01  // baseKeys.bitflip2

// Frame offsets of the constants (from SP).
#define C_LEN64ACC $0
#define C_AVALANCHE $8
#define C_BITFLIP1 $16
#define C_BITFLIP2 $24
#define C_ODD16 $32   // 0x0000ffff0000ffff
#define C_EVEN16 $40  // 0xffff0000ffff0000
#define C_ODD8 $48    // 0xff00ff00ff00ff00
#define C_EVEN8 $56   // 0x00ff00ff00ff00ff

// MULFOLD pushes hi ^ lo of the 128-bit product of R6 and R7 (mulFold).
// WebAssembly has no 64x64->128-bit multiply: hi comes from the four
// 32x32->64-bit products of the halves, lo is one 64-bit multiply.
// With a = R6, b = R7, halves aH:aL and bH:bL:
//   cross = (aL*bL >> 32) + (aH*bL & 0xffffffff) + aL*bH  (cannot overflow)
//   hi    = aH*bH + (aH*bL >> 32) + (cross >> 32)
// Uses R8..R12; leaves R6 and R7 as they were.
#define MULFOLD \
	Get R6; I64Const $32; I64ShrU; Set R9; \
	Get R6; I32WrapI64; I64ExtendI32U; Set R8; \
	Get R7; I64Const $32; I64ShrU; Set R11; \
	Get R7; I32WrapI64; I64ExtendI32U; Set R10; \
	Get R8; Get R10; I64Mul; I64Const $32; I64ShrU; \
	Get R9; Get R10; I64Mul; Tee R12; I32WrapI64; I64ExtendI32U; I64Add; \
	Get R8; Get R11; I64Mul; I64Add; \
	I64Const $32; I64ShrU; \
	Get R12; I64Const $32; I64ShrU; I64Add; \
	Get R9; Get R11; I64Mul; I64Add; \
	Get R6; Get R7; I64Mul; I64Xor

// FINALIZE replaces the value on top of the stack with its XXH3
// avalanche (finalize). Uses R13.
#define FINALIZE \
	Tee R13; I64Const $37; I64ShrU; Get R13; I64Xor; \
	Get SP; I64Load C_AVALANCHE; I64Mul; \
	Tee R13; I64Const $32; I64ShrU; Get R13; I64Xor

// HASHBLOCK pushes XXH3-64 of the 64 bytes at PC_B: the sum of mulFold
// over the four pairs of words xored with their keys, k_j being the key of
// word j, then the avalanche. The first loads are the highest offsets from
// PC_B and from SP. Uses R6..R13.
#define HASHBLOCK \
	Get PC_B; I64Load $56; I64Load k_7+96(FP); I64Xor; Set R7; \
	Get PC_B; I64Load $48; I64Load k_6+88(FP); I64Xor; Set R6; \
	MULFOLD; Get SP; I64Load C_LEN64ACC; I64Add; \
	Get PC_B; I64Load $40; I64Load k_5+80(FP); I64Xor; Set R7; \
	Get PC_B; I64Load $32; I64Load k_4+72(FP); I64Xor; Set R6; \
	MULFOLD; I64Add; \
	Get PC_B; I64Load $24; I64Load k_3+64(FP); I64Xor; Set R7; \
	Get PC_B; I64Load $16; I64Load k_2+56(FP); I64Xor; Set R6; \
	MULFOLD; I64Add; \
	Get PC_B; I64Load $8; I64Load k_1+48(FP); I64Xor; Set R7; \
	Get PC_B; I64Load $0; I64Load k_0+40(FP); I64Xor; Set R6; \
	MULFOLD; I64Add; \
	FINALIZE

// BSWAP6 pushes R6 with its bytes reversed (bits.ReverseBytes64), which
// WebAssembly has no instruction for: two rotations and two masks reverse
// the four 16-bit units, two more swap the bytes of each unit. Uses R13.
#define BSWAP6 \
	Get R6; I64Const $16; I64Rotl; Get SP; I64Load C_ODD16; I64And; \
	Get R6; I64Const $16; I64Rotr; Get SP; I64Load C_EVEN16; I64And; \
	I64Or; Tee R13; \
	I64Const $8; I64Rotl; Get SP; I64Load C_ODD8; I64And; \
	Get R13; I64Const $8; I64Rotr; Get SP; I64Load C_EVEN8; I64And; \
	I64Or

// CHAINSTEP sets R4, the chain, to the next sequence hash: XXH3-64 with
// BaseSeed of LE64(R4) || LE64(R5) (hash16). Uses R6..R13.
#define CHAINSTEP \
	Get R4; Get SP; I64Load C_BITFLIP1; I64Xor; Set R6; \
	Get R5; Get SP; I64Load C_BITFLIP2; I64Xor; Set R7; \
	MULFOLD; \
	Get R7; I64Add; \
	I64Const $16; I64Add; \
	BSWAP6; I64Add; \
	FINALIZE; \
	Set R4

// The loops' registers: PC_B the tokens of block i, R0 &l[i],
// R1 &sq[i-1] - &l[i], R2 &l[n], R3 the stride in bytes, R4 the chain
// (sequence hash of block i-2), R5 the local hash of block i-1, R15 that
// of block i. The loops carry only PC_B, R0, R4 and R5 from one iteration
// to the next.

// NEXT moves from block i to block i+1.
#define NEXT \
	Get R0; I64Const $8; I64Add; Set R0; \
	Get PC_B; Get R3; I32WrapI64; I32Add; Set PC_B

// LSTEP sets l[i] and moves to block i+1.
#define LSTEP \
	HASHBLOCK; Set R15; Get R0; I32WrapI64; Get R15; I64Store $0; \
	NEXT

// STEP sets l[i], then extends the chain with block i-1 and sets sq[i-1]
// (the chain runs one block behind, as in hashBlocks64BGo, so that its
// dependent steps overlap with hashing), and moves to block i+1.
#define STEP \
	HASHBLOCK; Set R15; Get R0; I32WrapI64; Get R15; I64Store $0; \
	CHAINSTEP; \
	Get R0; Get R1; I64Add; I32WrapI64; Get R4; I64Store $0; \
	Get R15; Set R5; \
	NEXT

// EACH runs S (LSTEP or STEP) for every block from R0 up to R2: once if
// their number is odd, then twice an iteration (unrolled by two: 7 %
// faster than one block an iteration; four was no better).
#define EACH(S) \
	Get R2; Get R0; I64Sub; I64Const $8; I64And; I64Const $0; I64Ne; \
	If; S; End; \
	Block; \
		Get R0; Get R2; I64Eq; BrIf $0; \
		Loop; S; S; Get R0; Get R2; I64Ne; BrIf $0; End; \
	End

// func hashBlocks64BWasm(l, sq *uint64, tokens *uint32, n, stride int, k [8]uint64) (chain uint64)
TEXT ·hashBlocks64BWasm(SB), NOSPLIT, $64-112
	Get SP; I64Const LEN64ACC; I64Store C_LEN64ACC
	Get SP; I64Const AVALANCHE; I64Store C_AVALANCHE
	Get SP; I64Const BITFLIP1; I64Store C_BITFLIP1
	Get SP; I64Const BITFLIP2; I64Store C_BITFLIP2
	Get SP; I64Const $0x0000ffff0000ffff; I64Store C_ODD16
	Get SP; I64Const $0xffff0000ffff0000; I64Store C_EVEN16
	Get SP; I64Const $0xff00ff00ff00ff00; I64Store C_ODD8
	Get SP; I64Const $0x00ff00ff00ff00ff; I64Store C_EVEN8

	MOVD l+0(FP), R0
	I64Load n+24(FP)
	I64Const $3
	I64Shl
	Get R0
	I64Add
	Set R2
	I64Load tokens+16(FP)
	I32WrapI64
	Set PC_B
	I64Load stride+32(FP)
	I64Const $2
	I64Shl
	Set R3
	MOVD $0, chain+104(FP)

	I64Load sq+8(FP)
	Tee R1
	I64Eqz
	If
		// Local hashes only.
		EACH(LSTEP)
		RET
	End
	Get R1
	Get R0
	I64Sub
	I64Const $8
	I64Sub
	Set R1

	// Block 0: its hash is also the first sequence hash, which the
	// caller sets when it is the last block.
	HASHBLOCK
	Set R5
	Get R0
	I32WrapI64
	Get R5
	I64Store $0
	NEXT
	Get R0
	Get R2
	I64Eq
	If
		RET
	End

	// Block 1: the chain starts at block 0's hash.
	Get R5
	Set R4
	HASHBLOCK
	Set R5
	Get R0
	I32WrapI64
	Get R5
	I64Store $0
	Get R0
	Get R1
	I64Add
	I32WrapI64
	Get R4
	I64Store $0
	NEXT

	// Blocks 2..n-1.
	EACH(STEP)
	MOVD R4, chain+104(FP)
	RET
