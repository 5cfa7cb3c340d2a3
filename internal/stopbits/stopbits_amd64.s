//go:build amd64 && !purego

#include "textflag.h"

// func marksAVX2(d *byte, blocks int, out *uint64)
TEXT ·marksAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ out+16(FP), DI
	// The constants go into X registers with legacy SSE moves before
	// any 256-bit instruction: a legacy SSE instruction run while the upper
	// halves of the Y registers are in use stalls on a state transition,
	// which costs some CPUs hundreds of cycles each time.
	MOVL $0x22, AX
	MOVQ AX, X0
	MOVL $0x5c, AX
	MOVQ AX, X1
	MOVL $0x1f, AX
	MOVQ AX, X2
	VPBROADCASTB X0, Y10 // '"'
	VPBROADCASTB X1, Y11 // '\\'
	VPBROADCASTB X2, Y12 // 0x1f
	TESTQ CX, CX
	JZ done

loop:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VPCMPEQB Y10, Y0, Y2
	VPCMPEQB Y11, Y0, Y3
	VPMAXUB Y12, Y0, Y4
	VPCMPEQB Y12, Y4, Y4 // max(c, 0x1f) == 0x1f: c <= 0x1f
	VPOR Y2, Y3, Y2
	VPOR Y2, Y4, Y2
	VPOR Y2, Y0, Y2 // bytes >= 0x80 have their high bit set already
	VPMOVMSKB Y2, AX
	VPCMPEQB Y10, Y1, Y5
	VPCMPEQB Y11, Y1, Y6
	VPMAXUB Y12, Y1, Y7
	VPCMPEQB Y12, Y7, Y7
	VPOR Y5, Y6, Y5
	VPOR Y5, Y7, Y5
	VPOR Y5, Y1, Y5
	VPMOVMSKB Y5, BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, (DI)
	ADDQ $64, SI
	ADDQ $8, DI
	DECQ CX
	JNZ loop

done:
	VZEROUPPER
	RET

// func quotesBackslashesAVX2(block *[64]byte) (quotes, backslashes uint64)
TEXT ·quotesBackslashesAVX2(SB), NOSPLIT, $0-24
	MOVQ block+0(FP), SI
	MOVL $0x22, AX
	MOVQ AX, X0
	MOVL $0x5c, AX
	MOVQ AX, X1
	VPBROADCASTB X0, Y10 // '"'
	VPBROADCASTB X1, Y11 // '\\'
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VPCMPEQB Y10, Y0, Y2
	VPCMPEQB Y10, Y1, Y3
	VPCMPEQB Y11, Y0, Y4
	VPCMPEQB Y11, Y1, Y5
	VPMOVMSKB Y2, AX
	VPMOVMSKB Y3, BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, quotes+8(FP)
	VPMOVMSKB Y4, AX
	VPMOVMSKB Y5, BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, backslashes+16(FP)
	VZEROUPPER
	RET
