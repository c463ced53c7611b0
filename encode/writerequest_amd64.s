//go:build amd64 && !purego

#include "textflag.h"

// Sample's size and fields' offsets (writerequest.go), and sampleTime's.
#define SAMPLE 40
#define S_LABELS 0
#define S_LABELS_LEN 8
#define S_LABELS_CAP 16
#define S_VALUE 24
#define S_TIMESTAMP 32
#define T_TS 0
#define T_N 8
#define T_BUF 16

// AHEAD is how many samples ahead the loop prefetches labels: 8 took
// BenchmarkProtocolEncode/v1-raw from about 25 to 22 ns a sample, and 16
// or 32 did no better (docs/performance.md).
#define AHEAD 8

// func appendSeriesAsm(dst []byte, samples []Sample, table [][]byte, ts *sampleTime) (n, done int)
//
// appendSeries and appendExpanded (writerequest.go, refs.go) for the forms
// nearly every series takes: label elements with lengths of one or two
// bytes, references in their two-byte forms, the timestamp field ts holds,
// and a TimeSeries length of one or two bytes. A series in any other form,
// or with bytes appendExpanded would refuse, is left unwritten, and so is
// one that finds fewer than 64 bytes of room in dst for its next element:
// appendSeries writes it. Everything is read inside the slices given
// (a shared reference inside its labels' capacity), except prefetches,
// which cannot fault. It needs AVX (VMOVDQU); the caller checks.
//
// Registers:
//
//	SI   the sample being written, CX the end of samples
//	R8   where the next byte goes in dst
//	R9   dst's end less 64: a 64-byte store is made only from R8 <= R9
//	R10  table's array, R11 its length (each []byte takes 24 bytes)
//	R15  where the sample's TimeSeries starts, where R8 goes back to leave it
//	DX   the next label byte, R14 the labels' last byte, BX the end of their capacity
//	DI, R12, R13, AX
//	     an element's source, its length, the bytes its source's capacity
//	     holds from it, and how far DX moves past it
TEXT ·appendSeriesAsm(SB), NOSPLIT, $0-96
	MOVQ dst_base+0(FP), R8
	MOVQ dst_cap+16(FP), R9
	ADDQ R8, R9
	SUBQ $64, R9
	ADDQ dst_len+8(FP), R8
	MOVQ samples_base+24(FP), SI
	MOVQ samples_len+32(FP), CX
	IMULQ $SAMPLE, CX
	ADDQ SI, CX
	MOVQ table_base+48(FP), R10
	MOVQ table_len+56(FP), R11

sample:
	CMPQ SI, CX
	JAE  ret
	MOVQ R8, R15
	CMPQ R8, R9
	JA   leave
	MOVQ ts+72(FP), AX
	MOVQ S_TIMESTAMP(SI), DI
	CMPQ DI, T_TS(AX)
	JNE  leave

	// Start loading the labels, and the shared ones at their capacity's
	// end, of the series AHEAD samples on.
	LEAQ (AHEAD*SAMPLE)(SI), AX
	CMPQ AX, CX
	JAE  header
	MOVQ S_LABELS(AX), DI
	PREFETCHT0 0(DI)
	MOVQ S_LABELS_CAP(AX), R12
	PREFETCHT0 -64(DI)(R12*1)

header:
	// The WriteRequest.timeseries tag, and two bytes for the length.
	MOVB $0x0a, 0(R8)
	ADDQ $3, R8
	MOVQ S_LABELS(SI), DX
	MOVQ S_LABELS_LEN(SI), R14
	ADDQ DX, R14
	DECQ R14
	MOVQ S_LABELS_CAP(SI), BX
	ADDQ DX, BX

label:
	// DX < R14: an element's first two bytes are there; DX == R14: the
	// labels end inside an element; DX > R14: they are done. Signed: for
	// nil labels R14 is -1.
	CMPQ DX, R14
	JGE  labelsEnd
	CMPQ R8, R9
	JA   leave
	MOVBLZX 0(DX), AX
	MOVBLZX 1(DX), R12
	CMPL AX, $0x0a           // tagTimeSeriesLabels
	JNE  reference

	// A literal element: its length in one byte, or two (literalLong).
	CMPL R12, $0x80
	JAE  literalLong
	ADDQ $2, R12

literal:
	LEAQ -1(DX)(R12*1), AX
	CMPQ AX, R14
	JA   leave
	MOVQ DX, DI
	MOVQ BX, R13
	SUBQ DX, R13
	MOVQ R12, AX
	JMP  copy

reference:
	CMPL AX, $0x80           // refInterned2
	JB   shared

	// An interned reference: a 15-bit index into table.
	ANDL $0x7f, AX
	SHLL $8, AX
	ORL  R12, AX
	CMPQ AX, R11
	JAE  leave
	LEAQ (AX)(AX*2), AX
	MOVQ 0(R10)(AX*8), DI
	MOVQ 8(R10)(AX*8), R12
	MOVQ 16(R10)(AX*8), R13
	MOVL $2, AX
	JMP  copy

shared:
	// A shared reference: a 14-bit distance back from the end of the
	// labels' capacity to an element, whose capacity is that distance.
	CMPL AX, $0x40           // refShared2
	JB   leave
	ANDL $0x3f, AX
	SHLL $8, AX
	ORL  R12, AX
	CMPQ AX, $2
	JB   leave
	MOVQ BX, DI
	SUBQ AX, DI
	CMPQ DI, S_LABELS(SI)
	JB   leave
	CMPB 0(DI), $0x0a
	JNE  leave
	MOVBLZX 1(DI), R12
	CMPL R12, $0x80
	JAE  sharedLong
	ADDQ $2, R12

sharedLen:
	CMPQ R12, AX
	JA   leave
	MOVQ AX, R13
	MOVL $2, AX

copy:
	// Up to 64 bytes from a source with 64 in its capacity: two 32-byte
	// stores, which may write past the element into dst's room (the next
	// element or the sample overwrites it). Anything else: its bytes.
	CMPQ R12, $64
	JA   exact
	CMPQ R13, $64
	JB   exact
	VMOVDQU 0(DI), Y0
	VMOVDQU 32(DI), Y1
	VMOVDQU Y0, 0(R8)
	VMOVDQU Y1, 32(R8)

next:
	ADDQ R12, R8
	ADDQ AX, DX
	JMP  label

exact:
	// The element must fit in dst: R8 + R12 <= R9 + 64.
	LEAQ -64(R8)(R12*1), R13
	CMPQ R13, R9
	JA   leave
	CMPQ R12, $16
	JB   short

exact16:
	// 16 bytes at a time, then the last 16, overlapping those before;
	// R8 and R12 move together, so that next ends where the element does.
	CMPQ R12, $16
	JBE  exactLast
	VMOVDQU 0(DI), X0
	VMOVDQU X0, 0(R8)
	ADDQ $16, DI
	ADDQ $16, R8
	SUBQ $16, R12
	JMP  exact16

exactLast:
	VMOVDQU -16(DI)(R12*1), X0
	VMOVDQU X0, -16(R8)(R12*1)
	JMP  next

short:
	// 8 to 15 bytes: the first and the last 8, overlapping. A label with
	// a name and a value takes at least 8; shorter elements (an empty name
	// or value, which LabelsBuilder leaves out) are left.
	CMPQ R12, $8
	JB   leave
	MOVQ 0(DI), R13
	MOVQ R13, 0(R8)
	MOVQ -8(DI)(R12*1), R13
	MOVQ R13, -8(R8)(R12*1)
	JMP  next

literalLong:
	// Two bytes of length, the second ending the varint.
	LEAQ 2(DX), AX
	CMPQ AX, R14
	JA   leave
	MOVBLZX 2(DX), AX
	CMPL AX, $0x80
	JAE  leave
	SHLL $7, AX
	ANDL $0x7f, R12
	ORL  AX, R12
	ADDQ $3, R12
	JMP  literal

sharedLong:
	CMPQ AX, $3
	JB   leave
	MOVBLZX 2(DI), R13
	CMPL R13, $0x80
	JAE  leave
	SHLL $7, R13
	ANDL $0x7f, R12
	ORL  R13, R12
	ADDQ $3, R12
	JMP  sharedLen

labelsEnd:
	// The flags are still DX's against R14.
	JE   leave

	// TimeSeries.samples: its tag and length, the value unless it is ±0
	// (proto3 leaves a 0 out), and ts's timestamp field, n bytes of a
	// 16-byte block: at most 27 bytes, inside the 64 of room.
	CMPQ R8, R9
	JA   leave
	MOVQ ts+72(FP), AX
	MOVQ T_N(AX), R13
	VMOVDQU T_BUF(AX), X4
	MOVQ S_VALUE(SI), DI
	MOVB $0x12, 0(R8)        // tagTimeSeriesSamples
	MOVQ DI, R12
	SHLQ $1, R12
	JZ   zeroValue
	MOVB $0x09, 2(R8)        // tagSampleValue
	MOVQ DI, 3(R8)
	VMOVDQU X4, 11(R8)
	LEAQ 9(R13), R12
	MOVB R12, 1(R8)
	LEAQ 11(R8)(R13*1), R8
	JMP  length

zeroValue:
	VMOVDQU X4, 2(R8)
	MOVB R13, 1(R8)
	LEAQ 2(R8)(R13*1), R8

length:
	// The TimeSeries' length, in the two bytes behind its tag.
	MOVQ R8, AX
	SUBQ R15, AX
	SUBQ $3, AX
	CMPQ AX, $128
	JB   oneByte
	CMPQ AX, $16384
	JAE  leave
	MOVL AX, R12
	ORL  $0x80, R12
	MOVB R12, 1(R15)
	SHRL $7, AX
	MOVB AX, 2(R15)
	ADDQ $SAMPLE, SI
	JMP  sample

oneByte:
	// A length of one byte: the body moves back by one, 16 bytes at a
	// time from its start, each load ahead of every store before it. The
	// last load and store may run up to 15 bytes past the body: the
	// sample moved R8 at most 22 bytes into its 64 of room.
	MOVB AX, 1(R15)
	LEAQ 3(R15), DI
	LEAQ 2(R15), R12

oneByteMove:
	VMOVDQU 0(DI), X0
	VMOVDQU X0, 0(R12)
	ADDQ $16, DI
	ADDQ $16, R12
	CMPQ DI, R8
	JB   oneByteMove
	DECQ R8
	ADDQ $SAMPLE, SI
	JMP  sample

leave:
	MOVQ R15, R8

ret:
	VZEROUPPER
	SUBQ dst_base+0(FP), R8
	MOVQ R8, n+80(FP)
	MOVQ SI, AX
	SUBQ samples_base+24(FP), AX
	XORL DX, DX
	MOVQ $SAMPLE, CX
	DIVQ CX
	MOVQ AX, done+88(FP)
	RET
