/*
 * A fixture written for counterhal-gen's tests, shaped like libpfm4's private AMD header:
 * the revision enumeration and the flags that name revisions.
 */
typedef enum {
	AMD64_CPU_UN = 0,
	AMD64_K7,
	AMD64_K8_REV_B,
	AMD64_K8_REV_C,
	AMD64_K8_REV_D,
	AMD64_K8_REV_E,
	AMD64_K8_REV_F,
	AMD64_K8_REV_G,
} amd64_rev_t;

#define AMD64_FROM_REV(rev)	((rev)<<8)
#define AMD64_TILL_REV(rev)	((rev)<<16)

#define AMD64_FL_NCOMBO		0x01 /* fixture text */
#define AMD64_FL_DFL		0x08

#define AMD64_FL_TILL_K8_REV_C	AMD64_TILL_REV(AMD64_K8_REV_C)
#define AMD64_FL_K8_REV_D	AMD64_FROM_REV(AMD64_K8_REV_D)
#define AMD64_FL_K8_REV_F	AMD64_FROM_REV(AMD64_K8_REV_F)
