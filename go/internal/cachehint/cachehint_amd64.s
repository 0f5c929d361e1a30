#include "textflag.h"

// func Line(p *byte, off int)
TEXT ·Line(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), AX
	MOVQ off+8(FP), BX
	PREFETCHT0 (AX)(BX*1)
	RET
