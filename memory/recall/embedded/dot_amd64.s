//go:build amd64 && !purego

#include "textflag.h"

// func dotRows7(q *byte, rows *uint64, n, rowBytes, nchunks int, out *uint32)
//
// Per row: each 32-byte chunk of codes is shifted to 7 bits (VPSRLW by one,
// then the top bit of every byte cleared), multiplied by the query's
// chunk byte by byte with adjacent products summed into 16-bit lanes
// (VPMADDUBSW: at most 2·127·127, no saturation), widened and summed in
// pairs to 32-bit lanes (VPMADDWD by ones) and accumulated; the eight
// lanes are summed at the end of the row. The last chunk is read at
// rowBytes-32, so that no read passes the row's end; the query's last chunk
// has zeros where it overlaps the one before.
TEXT ·dotRows7(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ rows+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ rowBytes+24(FP), R8
	MOVQ nchunks+32(FP), R9
	MOVQ out+40(FP), DX

	MOVQ $0x7f7f7f7f7f7f7f7f, AX
	MOVQ AX, X15
	VPBROADCASTQ X15, Y15
	MOVQ $0x0001000100010001, AX
	MOVQ AX, X14
	VPBROADCASTQ X14, Y14

	// R10: the last chunk's offset in the row; R11: in the query.
	MOVQ R8, R10
	SUBQ $32, R10
	MOVQ R9, R11
	DECQ R11
	SHLQ $5, R11

row:
	VPXOR Y0, Y0, Y0
	XORQ BX, BX

chunk:
	CMPQ BX, R11
	JGE  last
	VMOVDQU (DI)(BX*1), Y1
	VPSRLW $1, Y1, Y1
	VPAND Y15, Y1, Y1
	VMOVDQU (SI)(BX*1), Y2
	VPMADDUBSW Y2, Y1, Y1
	VPMADDWD Y14, Y1, Y1
	VPADDD Y1, Y0, Y0
	ADDQ $32, BX
	JMP  chunk

last:
	VMOVDQU (DI)(R10*1), Y1
	VPSRLW $1, Y1, Y1
	VPAND Y15, Y1, Y1
	VMOVDQU (SI)(R11*1), Y2
	VPMADDUBSW Y2, Y1, Y1
	VPMADDWD Y14, Y1, Y1
	VPADDD Y1, Y0, Y0

	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, (DX)

	ADDQ $4, DX
	ADDQ R8, DI
	DECQ CX
	JNZ  row

	VZEROUPPER
	RET
