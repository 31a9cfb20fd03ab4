#include "textflag.h"

// func prefetchOrder(o, ln unsafe.Pointer)
TEXT ·prefetchOrder(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ o+0(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	MOVQ ln+8(FP), AX
	PREFETCHT0 (AX)
	RET

// func prefetch1(p unsafe.Pointer)
TEXT ·prefetch1(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET
