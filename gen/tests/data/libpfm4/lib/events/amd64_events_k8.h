/*
 * A fixture written for counterhal-gen's tests, shaped like libpfm4's K8 table; it is no real
 * CPU's table.
 */
static const amd64_umask_t amd64_k8_probe[]={
  { .uname  = "MISS",
    .udesc  = "fixture text",
    .ucode  = 0x1,
  },
  { .uname  = "LATER",
    .udesc  = "fixture text",
    .ucode  = 0x2,
    .uflags = AMD64_FL_K8_REV_D,
  },
  { .uname  = "ALL",
    .udesc  = "fixture text",
    .ucode  = 0x1,
    .uflags = AMD64_FL_NCOMBO | AMD64_FL_DFL | AMD64_FL_TILL_K8_REV_C,
  },
  { .uname  = "ALL",
    .udesc  = "fixture text",
    .ucode  = 0x3,
    .uflags = AMD64_FL_NCOMBO | AMD64_FL_DFL | AMD64_FL_K8_REV_D,
  },
};

static const amd64_entry_t amd64_k8_pe[]={
  { .name   = "CYCLES",
    .desc   = "fixture text",
    .code   = 0x76,
  },
  { .name   = "PROBE",
    .desc   = "fixture text",
    .code   = 0xec,
    .numasks = LIBPFM_ARRAY_SIZE(amd64_k8_probe),
    .umasks = amd64_k8_probe,
  },
  { .name   = "NEWER",
    .desc   = "fixture text",
    .code   = 0xe5,
    .flags  = AMD64_FL_K8_REV_F,
  },
};
