/*
 * A libpfm4-shaped table of the project's own for the tests of gen/src/dropped.rs: names
 * and codes chosen to exercise the rule, not copied from libpfm4.
 */
static const intel_x86_umask_t nhm_uops_issued[]={
  { .uname = "ANY",
    .ucode = 0x100,
    .uflags = INTEL_X86_NCOMBO | INTEL_X86_DFL,
  },
  { .uname = "STALL_CYCLES",
    .ucode = 0x100 | INTEL_X86_MOD_INV | (2 << INTEL_X86_CMASK_BIT),
    .uflags = INTEL_X86_NCOMBO,
  },
  { .uname = "CORE_STALL_CYCLES",
    .ucode = 0x100 | INTEL_X86_MOD_ANY | INTEL_X86_MOD_INV | (1 << INTEL_X86_CMASK_BIT),
    .ucntmsk = 0x3,
    .uflags = INTEL_X86_NCOMBO,
  },
  { .uname = "FUSED",
    .ucode = 0x200,
    .uflags = INTEL_X86_NCOMBO,
  },
};

static const intel_x86_umask_t nhm_l2_hw_prefetch[]={
  { .uname = "HIT",
    .ucode = 0x100,
    .uflags = INTEL_X86_NCOMBO | INTEL_X86_DFL,
  },
  { .uname = "ALLOC",
    .ucode = 0x200,
    .uflags = INTEL_X86_NCOMBO,
  },
  { .uname = "ALLOC_ANY",
    .ucode = 0x200 | INTEL_X86_MOD_ANY,
    .uflags = INTEL_X86_NCOMBO,
  },
};

static const intel_x86_entry_t intel_nhm_pe[]={
{ .name = "UOPS_ISSUED",
  .code = 0x0e,
  .cntmsk = 0xf,
  .ngrp = 1,
  .umasks = nhm_uops_issued,
},
{ .name = "BOGUS_BR",
  .code = 0x1e4,
  .cntmsk = 0xf,
},
{ .name = "L2_HW_PREFETCH",
  .code = 0xf3,
  .cntmsk = 0x3,
  .ngrp = 1,
  .umasks = nhm_l2_hw_prefetch,
},
{ .name = "OLD_CYCLES",
  .code = 0x3c,
  .cntmsk = 0xf,
},
};
