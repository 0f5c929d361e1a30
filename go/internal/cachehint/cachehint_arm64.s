#include "textflag.h"

// func Line(p *byte, off int)
TEXT ·Line(SB), NOSPLIT|NOFRAME, $0-16
	MOVD p+0(FP), R0
	MOVD off+8(FP), R1
	ADD  R1, R0
	PRFM (R0), PLDL1KEEP
	RET
