/* counterhal's papi.h: PAPI 7.0's C interface (constants, codes, structure layouts and
 * functions) over counterhal, or PAPI 7.2's where papi-7.2/papi.h includes it (defining
 * COUNTERHAL_PAPI_7_2). Written from the interface's ABI facts, not from PAPI's files;
 * papi/tests/abi.rs compiles a program that checks every value, size and offset here against
 * an installed PAPI 7.0 papi.h, and papi-7.2/papi.h's against PAPI 7.2's. The library answers
 * a program in the release whose PAPI_VER_CURRENT it passed to PAPI_library_init. README.md
 * says which functions count and which return PAPI_ENOSUPP. */
/* The guard is the one PAPI's header has, so code that tests for it finds it. */
#ifndef _PAPI
#define _PAPI

/* As PAPI's header: the types (pid_t, caddr_t) and limits (SHRT_MAX, PATH_MAX) a PAPI
 * program may use without including them itself. */
#include <sys/types.h>
#include <limits.h>
#include <signal.h>
#include "papiStdEventDefs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PAPI_VERSION_NUMBER(maj, min, rev, inc) (((maj) << 24) | ((min) << 16) | ((rev) << 8) | (inc))
#define PAPI_VERSION_MAJOR(x) (((x) >> 24) & 0xff)
#define PAPI_VERSION_MINOR(x) (((x) >> 16) & 0xff)
#define PAPI_VERSION_REVISION(x) (((x) >> 8) & 0xff)
#define PAPI_VERSION_INCREMENT(x) ((x) & 0xff)
#ifdef COUNTERHAL_PAPI_7_2
#define PAPI_VERSION PAPI_VERSION_NUMBER(7, 2, 0, 0)
#else
#define PAPI_VERSION PAPI_VERSION_NUMBER(7, 0, 0, 0)
#endif
#define PAPI_VER_CURRENT (PAPI_VERSION & 0xffff0000)

/* Return codes. */
#define PAPI_OK 0
#define PAPI_EINVAL -1
#define PAPI_ENOMEM -2
#define PAPI_ESYS -3
#define PAPI_ECMP -4
#define PAPI_ESBSTR -4
#define PAPI_ECLOST -5
#define PAPI_EBUG -6
#define PAPI_ENOEVNT -7
#define PAPI_ECNFLCT -8
#define PAPI_ENOTRUN -9
#define PAPI_EISRUN -10
#define PAPI_ENOEVST -11
#define PAPI_ENOTPRESET -12
#define PAPI_ENOCNTR -13
#define PAPI_EMISC -14
#define PAPI_EPERM -15
#define PAPI_ENOINIT -16
#define PAPI_ENOCMP -17
#define PAPI_ENOSUPP -18
#define PAPI_ENOIMPL -19
#define PAPI_EBUF -20
#define PAPI_EINVAL_DOM -21
#define PAPI_EATTR -22
#define PAPI_ECOUNT -23
#define PAPI_ECOMBO -24
#define PAPI_ECMP_DISABLED -25
#define PAPI_EDELAY_INIT -26
#define PAPI_EMULPASS -27
#ifdef COUNTERHAL_PAPI_7_2
#define PAPI_PARTIAL -28
#define PAPI_NUM_ERRORS 29
#else
#define PAPI_NUM_ERRORS 28
#endif

/* Initialisation states. */
#define PAPI_NOT_INITED 0
#define PAPI_LOW_LEVEL_INITED 1
#define PAPI_HIGH_LEVEL_INITED 2
#define PAPI_THREAD_LEVEL_INITED 4

#define PAPI_NULL -1

/* Domains. */
#define PAPI_DOM_USER 0x1
#define PAPI_DOM_MIN PAPI_DOM_USER
#define PAPI_DOM_KERNEL 0x2
#define PAPI_DOM_OTHER 0x4
#define PAPI_DOM_SUPERVISOR 0x8
#define PAPI_DOM_ALL (PAPI_DOM_USER | PAPI_DOM_KERNEL | PAPI_DOM_OTHER | PAPI_DOM_SUPERVISOR)
#define PAPI_DOM_MAX PAPI_DOM_ALL
#define PAPI_DOM_HWSPEC 0x80000000

/* Thread-specific data and locks. */
#define PAPI_USR1_TLS 0x0
#define PAPI_USR2_TLS 0x1
#define PAPI_TLS_HIGH_LEVEL 0x2
#define PAPI_NUM_TLS 0x3
#define PAPI_TLS_USR1 PAPI_USR1_TLS
#define PAPI_TLS_USR2 PAPI_USR2_TLS
#define PAPI_TLS_NUM PAPI_NUM_TLS
#define PAPI_TLS_ALL_THREADS 0x10
#define PAPI_USR1_LOCK 0x0
#define PAPI_USR2_LOCK 0x1
#define PAPI_NUM_LOCK 0x2
#define PAPI_LOCK_USR1 PAPI_USR1_LOCK
#define PAPI_LOCK_USR2 PAPI_USR2_LOCK
#define PAPI_LOCK_NUM PAPI_NUM_LOCK

/* Vendors. */
#define PAPI_VENDOR_UNKNOWN 0
#define PAPI_VENDOR_INTEL 1
#define PAPI_VENDOR_AMD 2
#define PAPI_VENDOR_IBM 3
#define PAPI_VENDOR_CRAY 4
#define PAPI_VENDOR_SUN 5
#define PAPI_VENDOR_FREESCALE 6
#define PAPI_VENDOR_ARM 7
#define PAPI_VENDOR_MIPS 8
#define PAPI_VENDOR_ARM_ARM 0x41
#define PAPI_VENDOR_ARM_BROADCOM 0x42
#define PAPI_VENDOR_ARM_CAVIUM 0x43
#define PAPI_VENDOR_ARM_FUJITSU 0x46
#define PAPI_VENDOR_ARM_HISILICON 0x48
#define PAPI_VENDOR_ARM_APM 0x50
#define PAPI_VENDOR_ARM_QUALCOMM 0x51

/* Granularities. */
#define PAPI_GRN_THR 0x1
#define PAPI_GRN_MIN PAPI_GRN_THR
#define PAPI_GRN_PROC 0x2
#define PAPI_GRN_PROCG 0x4
#define PAPI_GRN_SYS 0x8
#define PAPI_GRN_SYS_CPU 0x10
#define PAPI_GRN_MAX PAPI_GRN_SYS_CPU

/* Event set states. */
#define PAPI_STOPPED 0x01
#define PAPI_RUNNING 0x02
#define PAPI_PAUSED 0x04
#define PAPI_NOT_INIT 0x08
#define PAPI_OVERFLOWING 0x10
#define PAPI_PROFILING 0x20
#define PAPI_MULTIPLEXING 0x40
#define PAPI_ATTACHED 0x80
#define PAPI_CPU_ATTACHED 0x100

/* Error reporting. */
#define PAPI_QUIET 0
#define PAPI_VERB_ECONT 1
#define PAPI_VERB_ESTOP 2

/* Profiling and overflow flags. */
#define PAPI_PROFIL_POSIX 0x0
#define PAPI_PROFIL_RANDOM 0x1
#define PAPI_PROFIL_WEIGHTED 0x2
#define PAPI_PROFIL_COMPRESS 0x4
#define PAPI_PROFIL_BUCKET_16 0x8
#define PAPI_PROFIL_BUCKET_32 0x10
#define PAPI_PROFIL_BUCKET_64 0x20
#define PAPI_PROFIL_FORCE_SW 0x40
#define PAPI_PROFIL_DATA_EAR 0x80
#define PAPI_PROFIL_INST_EAR 0x100
#define PAPI_PROFIL_BUCKETS (PAPI_PROFIL_BUCKET_16 | PAPI_PROFIL_BUCKET_32 | PAPI_PROFIL_BUCKET_64)
#define PAPI_OVERFLOW_FORCE_SW 0x40
#define PAPI_OVERFLOW_HARDWARE 0x80
#define PAPI_MULTIPLEX_DEFAULT 0x0
#define PAPI_MULTIPLEX_FORCE_SW 0x1
#define PAPI_INHERIT_ALL 1
#define PAPI_INHERIT_NONE 0

/* Options of PAPI_get_opt and PAPI_set_opt. */
#define PAPI_DETACH 1
#define PAPI_DEBUG 2
#define PAPI_MULTIPLEX 3
#define PAPI_DEFDOM 4
#define PAPI_DOMAIN 5
#define PAPI_DEFGRN 6
#define PAPI_GRANUL 7
#define PAPI_DEF_MPX_NS 8
#define PAPI_MAX_MPX_CTRS 11
#define PAPI_PROFIL 12
#define PAPI_PRELOAD 13
#define PAPI_CLOCKRATE 14
#define PAPI_MAX_HWCTRS 15
#define PAPI_HWINFO 16
#define PAPI_EXEINFO 17
#define PAPI_MAX_CPUS 18
#define PAPI_ATTACH 19
#define PAPI_SHLIBINFO 20
#define PAPI_LIB_VERSION 21
#define PAPI_COMPONENTINFO 22
#define PAPI_DATA_ADDRESS 23
#define PAPI_INSTR_ADDRESS 24
#define PAPI_DEF_ITIMER 25
#define PAPI_DEF_ITIMER_NS 26
#define PAPI_CPU_ATTACH 27
#define PAPI_INHERIT 28
#define PAPI_USER_EVENTS_FILE 29
#define PAPI_INIT_SLOTS 64

#define PAPI_MIN_STR_LEN 64
#define PAPI_MAX_STR_LEN 128
#define PAPI_2MAX_STR_LEN 256
#define PAPI_HUGE_STR_LEN 1024
#define PAPI_PMU_MAX 80
#define PAPI_DERIVED 0x1

/* Modifiers of PAPI_enum_event and PAPI_enum_cmp_event (7.2 inserted three, which moved
 * those after them). */
enum {
    PAPI_ENUM_EVENTS = 0,
    PAPI_ENUM_FIRST,
#ifdef COUNTERHAL_PAPI_7_2
    PAPI_PRESET_ENUM_FIRST_COMP,
#endif
    PAPI_PRESET_ENUM_AVAIL,
    PAPI_PRESET_ENUM_MSC,
    PAPI_PRESET_ENUM_INS,
    PAPI_PRESET_ENUM_IDL,
    PAPI_PRESET_ENUM_BR,
    PAPI_PRESET_ENUM_CND,
    PAPI_PRESET_ENUM_MEM,
    PAPI_PRESET_ENUM_CACH,
    PAPI_PRESET_ENUM_L1,
    PAPI_PRESET_ENUM_L2,
    PAPI_PRESET_ENUM_L3,
    PAPI_PRESET_ENUM_TLB,
    PAPI_PRESET_ENUM_FP,
#ifdef COUNTERHAL_PAPI_7_2
    PAPI_PRESET_ENUM_CPU,
    PAPI_PRESET_ENUM_CPU_AVAIL,
#endif
    PAPI_NTV_ENUM_UMASKS,
    PAPI_NTV_ENUM_UMASK_COMBOS,
    PAPI_NTV_ENUM_IARR,
    PAPI_NTV_ENUM_DARR,
    PAPI_NTV_ENUM_OPCM,
    PAPI_NTV_ENUM_IEAR,
    PAPI_NTV_ENUM_DEAR,
    PAPI_NTV_ENUM_GROUPS
};
#define PAPI_ENUM_ALL PAPI_ENUM_EVENTS
#define PAPI_PRESET_BIT_MSC (1 << PAPI_PRESET_ENUM_MSC)
#define PAPI_PRESET_BIT_INS (1 << PAPI_PRESET_ENUM_INS)
#define PAPI_PRESET_BIT_IDL (1 << PAPI_PRESET_ENUM_IDL)
#define PAPI_PRESET_BIT_BR (1 << PAPI_PRESET_ENUM_BR)
#define PAPI_PRESET_BIT_CND (1 << PAPI_PRESET_ENUM_CND)
#define PAPI_PRESET_BIT_MEM (1 << PAPI_PRESET_ENUM_MEM)
#define PAPI_PRESET_BIT_CACH (1 << PAPI_PRESET_ENUM_CACH)
#define PAPI_PRESET_BIT_L1 (1 << PAPI_PRESET_ENUM_L1)
#define PAPI_PRESET_BIT_L2 (1 << PAPI_PRESET_ENUM_L2)
#define PAPI_PRESET_BIT_L3 (1 << PAPI_PRESET_ENUM_L3)
#define PAPI_PRESET_BIT_TLB (1 << PAPI_PRESET_ENUM_TLB)
#define PAPI_PRESET_BIT_FP (1 << PAPI_PRESET_ENUM_FP)
#define PAPI_NTV_GROUP_AND_MASK 0x00FF0000
#define PAPI_NTV_GROUP_SHIFT 16

#define long_long long long
#define u_long_long unsigned long long

typedef unsigned long PAPI_thread_id_t;

typedef struct _papi_all_thr_spec {
    int num;
    PAPI_thread_id_t *id;
    void **data;
} PAPI_all_thr_spec_t;

typedef void (*PAPI_overflow_handler_t)(int EventSet, void *address, long long overflow_vector,
                                        void *context);
typedef void *vptr_t;

typedef struct _papi_sprofil {
    void *pr_base;
    unsigned pr_size;
    vptr_t pr_off;
    unsigned pr_scale;
} PAPI_sprofil_t;

typedef struct _papi_itimer_option {
    int itimer_num;
    int itimer_sig;
    int ns;
    int flags;
} PAPI_itimer_option_t;

typedef struct _papi_inherit_option {
    int eventset;
    int inherit;
} PAPI_inherit_option_t;

typedef struct _papi_domain_option {
    int def_cidx;
    int eventset;
    int domain;
} PAPI_domain_option_t;

typedef struct _papi_granularity_option {
    int def_cidx;
    int eventset;
    int granularity;
} PAPI_granularity_option_t;

typedef struct _papi_preload_option {
    char lib_preload_env[PAPI_MAX_STR_LEN];
    char lib_preload_sep;
    char lib_dir_env[PAPI_MAX_STR_LEN];
    char lib_dir_sep;
} PAPI_preload_info_t;

typedef struct _papi_component_option {
    char name[PAPI_MAX_STR_LEN];
    char short_name[PAPI_MIN_STR_LEN];
    char description[PAPI_MAX_STR_LEN];
    char version[PAPI_MIN_STR_LEN];
    char support_version[PAPI_MIN_STR_LEN];
    char kernel_version[PAPI_MIN_STR_LEN];
    char disabled_reason[PAPI_HUGE_STR_LEN];
    int disabled;
#ifdef COUNTERHAL_PAPI_7_2
    char partially_disabled_reason[PAPI_HUGE_STR_LEN];
    int partially_disabled;
#endif
    int initialized;
    int CmpIdx;
    int num_cntrs;
    int num_mpx_cntrs;
    int num_preset_events;
    int num_native_events;
    int default_domain;
    int available_domains;
    int default_granularity;
    int available_granularities;
    int hardware_intr_sig;
    int component_type;
    char *pmu_names[PAPI_PMU_MAX];
    int reserved[8];
    unsigned int hardware_intr : 1;
    unsigned int precise_intr : 1;
    unsigned int posix1b_timers : 1;
    unsigned int kernel_profile : 1;
    unsigned int kernel_multiplex : 1;
    unsigned int fast_counter_read : 1;
    unsigned int fast_real_timer : 1;
    unsigned int fast_virtual_timer : 1;
    unsigned int attach : 1;
    unsigned int attach_must_ptrace : 1;
    unsigned int cntr_umasks : 1;
    unsigned int cpu : 1;
    unsigned int inherit : 1;
    unsigned int reserved_bits : 19;
} PAPI_component_info_t;

typedef struct _papi_mpx_info {
    int timer_sig;
    int timer_num;
    int timer_us;
} PAPI_mpx_info_t;

typedef int (*PAPI_debug_handler_t)(int code);

typedef struct _papi_debug_option {
    int level;
    PAPI_debug_handler_t handler;
} PAPI_debug_option_t;

typedef struct _papi_address_map {
    char name[PAPI_HUGE_STR_LEN];
    vptr_t text_start;
    vptr_t text_end;
    vptr_t data_start;
    vptr_t data_end;
    vptr_t bss_start;
    vptr_t bss_end;
} PAPI_address_map_t;

typedef struct _papi_program_info {
    char fullname[PAPI_HUGE_STR_LEN];
    PAPI_address_map_t address_info;
} PAPI_exe_info_t;

typedef struct _papi_shared_lib_info {
    PAPI_address_map_t *map;
    int count;
} PAPI_shlib_info_t;

typedef char *PAPI_user_defined_events_file_t;

/* The memory hierarchy. */
#define PAPI_MH_TYPE_EMPTY 0x0
#define PAPI_MH_TYPE_INST 0x1
#define PAPI_MH_TYPE_DATA 0x2
#define PAPI_MH_TYPE_VECTOR 0x4
#define PAPI_MH_TYPE_TRACE 0x8
#define PAPI_MH_TYPE_UNIFIED (PAPI_MH_TYPE_INST | PAPI_MH_TYPE_DATA)
#define PAPI_MH_CACHE_TYPE(a) (a & 0xf)
#define PAPI_MH_TYPE_WT 0x00
#define PAPI_MH_TYPE_WB 0x10
#define PAPI_MH_CACHE_WRITE_POLICY(a) (a & 0xf0)
#define PAPI_MH_TYPE_UNKNOWN 0x000
#define PAPI_MH_TYPE_LRU 0x100
#define PAPI_MH_TYPE_PSEUDO_LRU 0x200
#define PAPI_MH_TYPE_FIFO 0x400
#define PAPI_MH_CACHE_REPLACEMENT_POLICY(a) (a & 0xf00)
#define PAPI_MH_TYPE_TLB 0x1000
#define PAPI_MH_TYPE_PREF 0x2000
#define PAPI_MH_TYPE_RD_ALLOC 0x10000
#define PAPI_MH_TYPE_WR_ALLOC 0x20000
#define PAPI_MH_TYPE_RW_ALLOC 0x40000
#define PAPI_MH_CACHE_ALLOCATION_POLICY(a) (a & 0xf0000)
#define PAPI_MH_MAX_LEVELS 6
#define PAPI_MAX_MEM_HIERARCHY_LEVELS 4

typedef struct _papi_mh_tlb_info {
    int type;
    int num_entries;
    int page_size;
    int associativity;
} PAPI_mh_tlb_info_t;

typedef struct _papi_mh_cache_info {
    int type;
    int size;
    int line_size;
    int num_lines;
    int associativity;
} PAPI_mh_cache_info_t;

typedef struct _papi_mh_level_info {
    PAPI_mh_tlb_info_t tlb[PAPI_MH_MAX_LEVELS];
    PAPI_mh_cache_info_t cache[PAPI_MH_MAX_LEVELS];
} PAPI_mh_level_t;

typedef struct _papi_mh_info {
    int levels;
    PAPI_mh_level_t level[PAPI_MAX_MEM_HIERARCHY_LEVELS];
} PAPI_mh_info_t;

typedef struct _papi_hw_info {
    int ncpu;
    int threads;
    int cores;
    int sockets;
    int nnodes;
    int totalcpus;
    int vendor;
    char vendor_string[PAPI_MAX_STR_LEN];
    int model;
    char model_string[PAPI_MAX_STR_LEN];
    float revision;
    int cpuid_family;
    int cpuid_model;
    int cpuid_stepping;
    int cpu_max_mhz;
    int cpu_min_mhz;
    PAPI_mh_info_t mem_hierarchy;
    int virtualized;
    char virtual_vendor_string[PAPI_MAX_STR_LEN];
    char virtual_vendor_version[PAPI_MAX_STR_LEN];
    float mhz;
    int clock_mhz;
    int reserved[8];
} PAPI_hw_info_t;

typedef struct _papi_attach_option {
    int eventset;
    unsigned long tid;
} PAPI_attach_option_t;

typedef struct _papi_cpu_option {
    int eventset;
    unsigned int cpu_num;
} PAPI_cpu_option_t;

typedef struct _papi_multiplex_option {
    int eventset;
    int ns;
    int flags;
} PAPI_multiplex_option_t;

typedef struct _papi_addr_range_option {
    int eventset;
    vptr_t start;
    vptr_t end;
    int start_off;
    int end_off;
} PAPI_addr_range_option_t;

typedef union {
    PAPI_preload_info_t preload;
    PAPI_debug_option_t debug;
    PAPI_inherit_option_t inherit;
    PAPI_granularity_option_t granularity;
    PAPI_granularity_option_t defgranularity;
    PAPI_domain_option_t domain;
    PAPI_domain_option_t defdomain;
    PAPI_attach_option_t attach;
    PAPI_cpu_option_t cpu;
    PAPI_multiplex_option_t multiplex;
    PAPI_itimer_option_t itimer;
    PAPI_hw_info_t *hw_info;
    PAPI_shlib_info_t *shlib_info;
    PAPI_exe_info_t *exe_info;
    PAPI_component_info_t *cmp_info;
    PAPI_addr_range_option_t addr;
    PAPI_user_defined_events_file_t events_file;
} PAPI_option_t;

typedef struct _dmem_t {
    long long peak;
    long long size;
    long long resident;
    long long high_water_mark;
    long long shared;
    long long text;
    long long library;
    long long heap;
    long long locked;
    long long stack;
    long long pagesize;
    long long pte;
} PAPI_dmem_info_t;

#define PAPIF_DMEM_VMPEAK 1
#define PAPIF_DMEM_VMSIZE 2
#define PAPIF_DMEM_RESIDENT 3
#define PAPIF_DMEM_HIGH_WATER 4
#define PAPIF_DMEM_SHARED 5
#define PAPIF_DMEM_TEXT 6
#define PAPIF_DMEM_LIBRARY 7
#define PAPIF_DMEM_HEAP 8
#define PAPIF_DMEM_LOCKED 9
#define PAPIF_DMEM_STACK 10
#define PAPIF_DMEM_PAGESIZE 11
#define PAPIF_DMEM_PTE 12
#define PAPIF_DMEM_MAXVAL 12

#define PAPI_MAX_INFO_TERMS 12
#ifdef COUNTERHAL_PAPI_7_2
#define PAPI_MAX_COMP_QUALS 8
#endif

enum {
    PAPI_LOCATION_CORE = 0,
    PAPI_LOCATION_CPU,
    PAPI_LOCATION_PACKAGE,
    PAPI_LOCATION_UNCORE
};
enum {
    PAPI_DATATYPE_INT64 = 0,
    PAPI_DATATYPE_UINT64,
    PAPI_DATATYPE_FP64,
    PAPI_DATATYPE_BIT64
};
enum {
    PAPI_VALUETYPE_RUNNING_SUM = 0,
    PAPI_VALUETYPE_ABSOLUTE
};
enum {
    PAPI_TIMESCOPE_SINCE_START = 0,
    PAPI_TIMESCOPE_SINCE_LAST,
    PAPI_TIMESCOPE_UNTIL_NEXT,
    PAPI_TIMESCOPE_POINT
};
enum {
    PAPI_UPDATETYPE_ARBITRARY = 0,
    PAPI_UPDATETYPE_PUSH,
    PAPI_UPDATETYPE_PULL,
    PAPI_UPDATETYPE_FIXEDFREQ
};

typedef struct event_info {
    unsigned int event_code;
    char symbol[PAPI_HUGE_STR_LEN];
    char short_descr[PAPI_MIN_STR_LEN];
    char long_descr[PAPI_HUGE_STR_LEN];
    int component_index;
    char units[PAPI_MIN_STR_LEN];
    int location;
    int data_type;
    int value_type;
    int timescope;
    int update_type;
    int update_freq;
    unsigned int count;
    unsigned int event_type;
    char derived[PAPI_MIN_STR_LEN];
    char postfix[PAPI_2MAX_STR_LEN];
    unsigned int code[PAPI_MAX_INFO_TERMS];
    char name[PAPI_MAX_INFO_TERMS][PAPI_2MAX_STR_LEN];
    char note[PAPI_HUGE_STR_LEN];
#ifdef COUNTERHAL_PAPI_7_2
    int num_quals;
    char quals[PAPI_MAX_COMP_QUALS][PAPI_HUGE_STR_LEN];
    char quals_descrs[PAPI_MAX_COMP_QUALS][PAPI_HUGE_STR_LEN];
#endif
} PAPI_event_info_t;

/* The low-level interface. */
int PAPI_accum(int EventSet, long long *values);
int PAPI_add_event(int EventSet, int Event);
int PAPI_add_named_event(int EventSet, const char *EventName);
int PAPI_add_events(int EventSet, int *Events, int number);
int PAPI_assign_eventset_component(int EventSet, int cidx);
int PAPI_attach(int EventSet, unsigned long tid);
int PAPI_cleanup_eventset(int EventSet);
int PAPI_create_eventset(int *EventSet);
int PAPI_detach(int EventSet);
int PAPI_destroy_eventset(int *EventSet);
int PAPI_enum_event(int *EventCode, int modifier);
int PAPI_enum_cmp_event(int *EventCode, int modifier, int cidx);
int PAPI_event_code_to_name(int EventCode, char *out);
int PAPI_event_name_to_code(const char *in, int *out);
int PAPI_get_dmem_info(PAPI_dmem_info_t *dest);
int PAPI_get_event_info(int EventCode, PAPI_event_info_t *info);
const PAPI_exe_info_t *PAPI_get_executable_info(void);
const PAPI_hw_info_t *PAPI_get_hardware_info(void);
const PAPI_component_info_t *PAPI_get_component_info(int cidx);
int PAPI_get_multiplex(int EventSet);
int PAPI_get_opt(int option, PAPI_option_t *ptr);
int PAPI_get_cmp_opt(int option, PAPI_option_t *ptr, int cidx);
long long PAPI_get_real_cyc(void);
long long PAPI_get_real_nsec(void);
long long PAPI_get_real_usec(void);
const PAPI_shlib_info_t *PAPI_get_shared_lib_info(void);
int PAPI_get_thr_specific(int tag, void **ptr);
int PAPI_get_overflow_event_index(int Eventset, long long overflow_vector, int *array, int *number);
long long PAPI_get_virt_cyc(void);
long long PAPI_get_virt_nsec(void);
long long PAPI_get_virt_usec(void);
int PAPI_is_initialized(void);
int PAPI_library_init(int version);
int PAPI_list_events(int EventSet, int *Events, int *number);
int PAPI_list_threads(unsigned long *tids, int *number);
int PAPI_lock(int);
int PAPI_multiplex_init(void);
int PAPI_num_cmp_hwctrs(int cidx);
int PAPI_num_events(int EventSet);
int PAPI_overflow(int EventSet, int EventCode, int threshold, int flags,
                  PAPI_overflow_handler_t handler);
void PAPI_perror(const char *msg);
int PAPI_profil(void *buf, unsigned bufsiz, vptr_t offset, unsigned scale, int EventSet,
                int EventCode, int threshold, int flags);
int PAPI_query_event(int EventCode);
int PAPI_query_named_event(const char *EventName);
int PAPI_read(int EventSet, long long *values);
int PAPI_read_ts(int EventSet, long long *values, long long *cyc);
int PAPI_register_thread(void);
int PAPI_remove_event(int EventSet, int EventCode);
int PAPI_remove_named_event(int EventSet, const char *EventName);
int PAPI_remove_events(int EventSet, int *Events, int number);
int PAPI_reset(int EventSet);
int PAPI_set_debug(int level);
int PAPI_set_cmp_domain(int domain, int cidx);
int PAPI_set_domain(int domain);
int PAPI_set_cmp_granularity(int granularity, int cidx);
int PAPI_set_granularity(int granularity);
int PAPI_set_multiplex(int EventSet);
int PAPI_set_opt(int option, PAPI_option_t *ptr);
int PAPI_set_thr_specific(int tag, void *ptr);
void PAPI_shutdown(void);
int PAPI_sprofil(PAPI_sprofil_t *prof, int profcnt, int EventSet, int EventCode, int threshold,
                 int flags);
int PAPI_start(int EventSet);
int PAPI_state(int EventSet, int *status);
int PAPI_stop(int EventSet, long long *values);
char *PAPI_strerror(int);
unsigned long PAPI_thread_id(void);
int PAPI_thread_init(unsigned long (*id_fn)(void));
int PAPI_unlock(int);
int PAPI_unregister_thread(void);
int PAPI_write(int EventSet, long long *values);
int PAPI_get_event_component(int EventCode);
int PAPI_get_eventset_component(int EventSet);
int PAPI_get_component_index(const char *name);
int PAPI_disable_component(int cidx);
int PAPI_disable_component_by_name(const char *name);
int PAPI_num_components(void);
int PAPI_flips_rate(int event, float *rtime, float *ptime, long long *flpins, float *mflips);
int PAPI_flops_rate(int event, float *rtime, float *ptime, long long *flpops, float *mflops);
int PAPI_ipc(float *rtime, float *ptime, long long *ins, float *ipc);
int PAPI_epc(int event, float *rtime, float *ptime, long long *ref, long long *core,
             long long *evt, float *epc);
int PAPI_rate_stop(void);

/* The high-level interface. */
int PAPI_hl_region_begin(const char *region);
int PAPI_hl_read(const char *region);
int PAPI_hl_region_end(const char *region);
int PAPI_hl_stop(void);

int PAPI_num_hwctrs(void);

/* The device interface (PAPI 7.0's sysdetect component): device types, each with a vendor and
 * a count of devices, and each device's attributes. The values are PAPI 7.0's. */
typedef enum {
    PAPI_DEV_TYPE_ID__CPU = 0,
    PAPI_DEV_TYPE_ID__CUDA = 1,
    PAPI_DEV_TYPE_ID__ROCM = 2,
    PAPI_DEV_TYPE_ID__MAX_NUM = 3
} PAPI_dev_type_id_e;

/* PAPI_enum_dev_type's modifier: FIRST restarts; otherwise a mask of device types. */
enum {
    PAPI_DEV_TYPE_ENUM__FIRST = 0,
    PAPI_DEV_TYPE_ENUM__CPU = 1 << PAPI_DEV_TYPE_ID__CPU,
    PAPI_DEV_TYPE_ENUM__CUDA = 1 << PAPI_DEV_TYPE_ID__CUDA,
    PAPI_DEV_TYPE_ENUM__ROCM = 1 << PAPI_DEV_TYPE_ID__ROCM,
    PAPI_DEV_TYPE_ENUM__ALL = (1 << PAPI_DEV_TYPE_ID__MAX_NUM) - 1
};

/* A device type's attributes: INT ones are written as int, CHAR ones as const char *. */
typedef enum {
    PAPI_DEV_TYPE_ATTR__INT_PAPI_ID = 0,
    PAPI_DEV_TYPE_ATTR__INT_VENDOR_ID = 1,
    PAPI_DEV_TYPE_ATTR__CHAR_NAME = 2,
    PAPI_DEV_TYPE_ATTR__INT_COUNT = 3,
    PAPI_DEV_TYPE_ATTR__CHAR_STATUS = 4
} PAPI_dev_type_attr_e;

/* A device's attributes, PAPI_DEV_ATTR__<DEVICE>_<TYPE>_<NAME>: UINT as unsigned int, ULONG as
 * unsigned long, CHAR as const char *. */
typedef enum {
    PAPI_DEV_ATTR__CPU_CHAR_NAME = 0,
    PAPI_DEV_ATTR__CPU_UINT_L1I_CACHE_SIZE = 1,
    PAPI_DEV_ATTR__CPU_UINT_L1D_CACHE_SIZE = 2,
    PAPI_DEV_ATTR__CPU_UINT_L2U_CACHE_SIZE = 3,
    PAPI_DEV_ATTR__CPU_UINT_L3U_CACHE_SIZE = 4,
    PAPI_DEV_ATTR__CPU_UINT_L1I_CACHE_LINE_SIZE = 5,
    PAPI_DEV_ATTR__CPU_UINT_L1D_CACHE_LINE_SIZE = 6,
    PAPI_DEV_ATTR__CPU_UINT_L2U_CACHE_LINE_SIZE = 7,
    PAPI_DEV_ATTR__CPU_UINT_L3U_CACHE_LINE_SIZE = 8,
    PAPI_DEV_ATTR__CPU_UINT_L1I_CACHE_LINE_COUNT = 9,
    PAPI_DEV_ATTR__CPU_UINT_L1D_CACHE_LINE_COUNT = 10,
    PAPI_DEV_ATTR__CPU_UINT_L2U_CACHE_LINE_COUNT = 11,
    PAPI_DEV_ATTR__CPU_UINT_L3U_CACHE_LINE_COUNT = 12,
    PAPI_DEV_ATTR__CPU_UINT_L1I_CACHE_ASSOC = 13,
    PAPI_DEV_ATTR__CPU_UINT_L1D_CACHE_ASSOC = 14,
    PAPI_DEV_ATTR__CPU_UINT_L2U_CACHE_ASSOC = 15,
    PAPI_DEV_ATTR__CPU_UINT_L3U_CACHE_ASSOC = 16,
    PAPI_DEV_ATTR__CPU_UINT_SOCKET_COUNT = 17,
    PAPI_DEV_ATTR__CPU_UINT_NUMA_COUNT = 18,
    PAPI_DEV_ATTR__CPU_UINT_CORE_COUNT = 19,
    PAPI_DEV_ATTR__CPU_UINT_THREAD_COUNT = 20,
    PAPI_DEV_ATTR__CPU_UINT_FAMILY = 21,
    PAPI_DEV_ATTR__CPU_UINT_MODEL = 22,
    PAPI_DEV_ATTR__CPU_UINT_STEPPING = 23,
    PAPI_DEV_ATTR__CPU_UINT_NUMA_MEM_SIZE = 24,
    PAPI_DEV_ATTR__CPU_UINT_THR_NUMA_AFFINITY = 25,
    PAPI_DEV_ATTR__CPU_UINT_THR_PER_NUMA = 26,
    PAPI_DEV_ATTR__CUDA_ULONG_UID = 27,
    PAPI_DEV_ATTR__CUDA_CHAR_DEVICE_NAME = 28,
    PAPI_DEV_ATTR__CUDA_UINT_WARP_SIZE = 29,
    PAPI_DEV_ATTR__CUDA_UINT_SHM_PER_BLK = 30,
    PAPI_DEV_ATTR__CUDA_UINT_SHM_PER_SM = 31,
    PAPI_DEV_ATTR__CUDA_UINT_BLK_DIM_X = 32,
    PAPI_DEV_ATTR__CUDA_UINT_BLK_DIM_Y = 33,
    PAPI_DEV_ATTR__CUDA_UINT_BLK_DIM_Z = 34,
    PAPI_DEV_ATTR__CUDA_UINT_GRD_DIM_X = 35,
    PAPI_DEV_ATTR__CUDA_UINT_GRD_DIM_Y = 36,
    PAPI_DEV_ATTR__CUDA_UINT_GRD_DIM_Z = 37,
    PAPI_DEV_ATTR__CUDA_UINT_THR_PER_BLK = 38,
    PAPI_DEV_ATTR__CUDA_UINT_SM_COUNT = 39,
    PAPI_DEV_ATTR__CUDA_UINT_MULTI_KERNEL = 40,
    PAPI_DEV_ATTR__CUDA_UINT_MAP_HOST_MEM = 41,
    PAPI_DEV_ATTR__CUDA_UINT_MEMCPY_OVERLAP = 42,
    PAPI_DEV_ATTR__CUDA_UINT_UNIFIED_ADDR = 43,
    PAPI_DEV_ATTR__CUDA_UINT_MANAGED_MEM = 44,
    PAPI_DEV_ATTR__CUDA_UINT_COMP_CAP_MAJOR = 45,
    PAPI_DEV_ATTR__CUDA_UINT_COMP_CAP_MINOR = 46,
    PAPI_DEV_ATTR__CUDA_UINT_BLK_PER_SM = 47,
    PAPI_DEV_ATTR__ROCM_ULONG_UID = 48,
    PAPI_DEV_ATTR__ROCM_CHAR_DEVICE_NAME = 49,
    PAPI_DEV_ATTR__ROCM_UINT_WAVEFRONT_SIZE = 50,
    PAPI_DEV_ATTR__ROCM_UINT_WORKGROUP_SIZE = 51,
    PAPI_DEV_ATTR__ROCM_UINT_WAVE_PER_CU = 52,
    PAPI_DEV_ATTR__ROCM_UINT_SHM_PER_WG = 53,
    PAPI_DEV_ATTR__ROCM_UINT_WG_DIM_X = 54,
    PAPI_DEV_ATTR__ROCM_UINT_WG_DIM_Y = 55,
    PAPI_DEV_ATTR__ROCM_UINT_WG_DIM_Z = 56,
    PAPI_DEV_ATTR__ROCM_UINT_GRD_DIM_X = 57,
    PAPI_DEV_ATTR__ROCM_UINT_GRD_DIM_Y = 58,
    PAPI_DEV_ATTR__ROCM_UINT_GRD_DIM_Z = 59,
    PAPI_DEV_ATTR__ROCM_UINT_CU_COUNT = 60,
    PAPI_DEV_ATTR__ROCM_UINT_SIMD_PER_CU = 61,
    PAPI_DEV_ATTR__ROCM_UINT_COMP_CAP_MAJOR = 62,
    PAPI_DEV_ATTR__ROCM_UINT_COMP_CAP_MINOR = 63
} PAPI_dev_attr_e;

int PAPI_enum_dev_type(int enum_modifier, void **handle);
int PAPI_get_dev_type_attr(void *handle, PAPI_dev_type_attr_e attr, void *value);
int PAPI_get_dev_attr(void *handle, int id, PAPI_dev_attr_e attr, void *value);

#define PAPI_COMPONENT_INDEX(a) PAPI_get_event_component(a)
#define PAPI_descr_error(a) PAPI_strerror(a)

#ifdef __cplusplus
}
#endif

#endif
