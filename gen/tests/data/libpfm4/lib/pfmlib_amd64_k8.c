/*
 * A fixture written for counterhal-gen's tests, shaped like libpfm4's K8 PMU source: one PMU
 * per revision.
 */
#define DEFINE_K8_REV(d, n, r, pmuid) \
pfmlib_pmu_t amd64_k8_##n##_support={				\
	.desc			= "fixture "#d,		\
	.name			= "amd64_k8_"#n,		\
	.pmu			= pmuid,			\
	.pmu_rev		= r,				\
}

DEFINE_K8_REV(RevB, revb, AMD64_K8_REV_B, PFM_PMU_AMD64_K8_REVB);
DEFINE_K8_REV(RevC, revc, AMD64_K8_REV_C, PFM_PMU_AMD64_K8_REVC);
DEFINE_K8_REV(RevD, revd, AMD64_K8_REV_D, PFM_PMU_AMD64_K8_REVD);
DEFINE_K8_REV(RevE, reve, AMD64_K8_REV_E, PFM_PMU_AMD64_K8_REVE);
DEFINE_K8_REV(RevF, revf, AMD64_K8_REV_F, PFM_PMU_AMD64_K8_REVF);
DEFINE_K8_REV(RevG, revg, AMD64_K8_REV_G, PFM_PMU_AMD64_K8_REVG);
