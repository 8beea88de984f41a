/* A fixture written for counterhal-gen's alias tests, shaped like libpfm4's Intel tables:
 * names that differ from the perfmon fixture's for the same encodings, and some that do not. */
static const intel_x86_umask_t fx_uops_issued[]={
   { .uname  = "ANY",
     .ucode  = 0x100,
     .uflags = INTEL_X86_DFL,
   },
   { .uname  = "STALLS",
     .ucode  = 0x100 | INTEL_X86_MOD_INV | (0x1 << INTEL_X86_CMASK_BIT),
   },
   { .uname  = "CORE_STALLS",
     .ucode  = 0x100 | INTEL_X86_MOD_ANY | INTEL_X86_MOD_INV | (0x1 << INTEL_X86_CMASK_BIT),
   },
   { .uname  = "CORE_STALLS_TOO",
     .ucode  = 0x100 | INTEL_X86_MOD_INV | (0x1 << INTEL_X86_CMASK_BIT),
     .uequiv = "STALLS:t=1",
   },
};

static const intel_x86_umask_t fx_loads[]={
   { .uname  = "L1_HIT",
     .ucode  = 0x100,
   },
   { .uname  = "L2_HIT",
     .ucode  = 0x200,
     .umodel = PFM_PMU_INTEL_SKX,
   },
};

static const intel_x86_umask_t fx_clk[]={
   { .uname  = "REF_XCLK",
     .ucode  = 0x300,
     .uflags = INTEL_X86_CODE_OVERRIDE,
   },
};

static const intel_x86_umask_t fx_ocr[]={
   { .uname  = "DMND_DATA_RD",
     .ucode  = 1ULL << (0 + 8),
   },
};

static const intel_x86_entry_t intel_skl_pe[]={
{ .name   = "INSTRUCTIONS_RETIRED",
  .desc   = "fixture text",
  .code   = 0xc0,
},
{ .name   = "UOPS_ISSUED",
  .code   = 0x0e,
  .numasks = LIBPFM_ARRAY_SIZE(fx_uops_issued),
  .umasks = fx_uops_issued,
},
{ .name   = "MEM_LOAD_UOPS_RETIRED",
  .code   = 0xd1,
  .numasks = LIBPFM_ARRAY_SIZE(fx_loads),
  .umasks = fx_loads,
},
{ .name   = "CPU_CLK_UNHALTED_EXTRA",
  .code   = 0x3c,
  .numasks = LIBPFM_ARRAY_SIZE(fx_clk),
  .umasks = fx_clk,
},
{ .name   = "OFFCORE_RESPONSE_0",
  .code   = 0x1b7,
  .numasks = LIBPFM_ARRAY_SIZE(fx_ocr),
  .umasks = fx_ocr,
},
};
