//! Who made the CPU and which one it is: the vendor string (CPUID leaf 0) and the display
//! family, model and stepping (leaf 1's signature), by the Intel SDM's and AMD APM's rule;
//! the core of a hybrid chip the thread runs on (leaf 0x1A); and the event database's model
//! for the CPU, detected or named by the caller.

use counterhal_events::{CpuIdentity, CpuModel, Database, HybridCore, Vendor};
use counterhal_hal::{Error, Result};

use crate::cpuid::{CpuidResult, CpuidSource};

/// A CPU's identity with the two leaves it came from, which PMU decoders read further.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identified {
    /// Vendor, display family, display model and stepping.
    pub identity: CpuIdentity,
    /// The highest basic leaf (CPUID.0:EAX).
    pub max_basic_leaf: u32,
    /// Leaf 1's registers (zeros when the CPU has no leaf 1).
    pub leaf1: CpuidResult,
}

/// The vendor named by leaf 0's EBX, EDX, ECX (`GenuineIntel`, `AuthenticAMD`, ...).
pub fn vendor(leaf0: CpuidResult) -> Vendor {
    let mut bytes = Vec::with_capacity(12);
    for word in [leaf0.ebx, leaf0.edx, leaf0.ecx] {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    Vendor::from_cpuid(String::from_utf8_lossy(&bytes).trim_end_matches('\0'))
}

/// The display family, model and stepping of `vendor`'s CPU with signature `eax`
/// (CPUID.1:EAX).
///
/// The rule of the Intel SDM (vol. 2A, CPUID) and the AMD APM (vol. 3, CPUID Fn0000_0001):
/// the display family is the base family, plus the extended family when the base family is
/// 0xF; the display model is the base model, with the extended model as its high nibble when
/// the base family is 0xF, or (Intel only; AMD leaves the extended model reserved below 0xF)
/// when it is 6. Other vendors are read by Intel's rule.
pub fn decode_signature(vendor: Vendor, eax: u32) -> CpuIdentity {
    let base_family = (eax >> 8) & 0xF;
    let base_model = (eax >> 4) & 0xF;
    let extended_model = (eax >> 16) & 0xF;
    let extended_family = (eax >> 20) & 0xFF;
    let family = if base_family == 0xF {
        base_family + extended_family
    } else {
        base_family
    };
    let fold = match &vendor {
        Vendor::Amd => base_family == 0xF,
        _ => base_family == 0xF || base_family == 6,
    };
    let model = if fold {
        (extended_model << 4) | base_model
    } else {
        base_model
    };
    CpuIdentity {
        vendor,
        family,
        model,
        stepping: eax & 0xF,
    }
}

/// Reads leaves 0 and 1 from `cpuid` and decodes the identity.
///
/// # Errors
/// The source's errors ([`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) off
/// x86 for the instruction).
pub fn identify(cpuid: &dyn CpuidSource) -> Result<Identified> {
    let leaf0 = cpuid.cpuid(0, 0)?;
    let leaf1 = if leaf0.eax >= 1 {
        cpuid.cpuid(1, 0)?
    } else {
        CpuidResult::default()
    };
    Ok(Identified {
        identity: decode_signature(vendor(leaf0), leaf1.eax),
        max_basic_leaf: leaf0.eax,
        leaf1,
    })
}

/// The CPU's vendor, family, model and stepping, whatever its PMU.
///
/// # Errors
/// As [`identify`].
pub fn cpu_identity(cpuid: &dyn CpuidSource) -> Result<CpuIdentity> {
    identify(cpuid).map(|identified| identified.identity)
}

/// The leaf 7 EDX bit of a hybrid chip (Intel SDM vol. 2A, CPUID leaf 07H: "Hybrid").
const LEAF7_EDX_HYBRID: u32 = 1 << 15;

/// The core of a hybrid chip that answered (CPUID leaf 0x1A EAX: core type in bits 31:24,
/// native model id in bits 23:0), for the instruction the core the calling thread runs on;
/// `None` on a chip that is not hybrid (leaf 7 EDX bit 15 clear or no leaf 0x1A), as on AMD.
///
/// # Errors
/// The source's errors.
pub fn hybrid_core(cpuid: &dyn CpuidSource) -> Result<Option<HybridCore>> {
    let max_basic = cpuid.cpuid(0, 0)?.eax;
    if max_basic < 0x1A || cpuid.cpuid(7, 0)?.edx & LEAF7_EDX_HYBRID == 0 {
        return Ok(None);
    }
    Ok(HybridCore::from_leaf_1a(cpuid.cpuid(0x1A, 0)?.eax))
}

/// The event database's model for the CPU `cpuid` describes: its signature, and on a hybrid
/// chip the core that answered (the P-cores' and E-cores' tables differ). `None` when no
/// model matches.
///
/// # Errors
/// As [`identify`].
pub fn detect_model<'db>(
    db: &'db Database,
    cpuid: &dyn CpuidSource,
) -> Result<Option<&'db CpuModel>> {
    let identity = cpu_identity(cpuid)?;
    let core = hybrid_core(cpuid)?;
    Ok(db.detect_core(&identity, core.as_ref()))
}

/// The event database's CPU model `id` (case-insensitive), as a caller names it (`--cpu-model`: an id or perf's signature)
/// instead of letting CPUID pick one.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) for an id the
/// database lacks; the message lists the ids it has.
pub fn named_model<'db>(db: &'db Database, id: &str) -> Result<&'db CpuModel> {
    db.model(id).ok_or_else(|| {
        let known: Vec<&str> = db.models().map(|m| m.id.as_str()).collect();
        Error::invalid_input(format!(
            "{} (known: {})",
            counterhal_events::unknown_model_message(id),
            known.join(", ")
        ))
        .with_hint("see `counterhal list` for the CPU model ids")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuid::CpuidDump;

    fn decode(vendor: Vendor, eax: u32) -> (u32, u32, u32) {
        let id = decode_signature(vendor, eax);
        (id.family, id.model, id.stepping)
    }

    /// Signatures checked by hand against the vendors' tables.
    #[test]
    fn the_sdm_and_apm_rule() {
        // Kaby Lake (Core i7-7700K): family 6 model 0x9E stepping 9.
        assert_eq!(decode(Vendor::Intel, 0x0009_06E9), (6, 0x9E, 9));
        // Pentium III Coppermine: family 6 model 8, no extended model.
        assert_eq!(decode(Vendor::Intel, 0x0000_0683), (6, 8, 3));
        // Pentium 4 (NetBurst): family 0xF model 2.
        assert_eq!(decode(Vendor::Intel, 0x0000_0F29), (0xF, 2, 9));
        // Pentium (P5): family 5 model 2; the extended fields do not apply.
        assert_eq!(decode(Vendor::Intel, 0x0001_0525), (5, 2, 5));
        // Zen 3 (EPYC 7003): family 0x19 model 0x01 stepping 1; Ryzen 5000: model 0x21.
        assert_eq!(decode(Vendor::Amd, 0x00A0_0F11), (0x19, 0x01, 1));
        assert_eq!(decode(Vendor::Amd, 0x00A2_0F12), (0x19, 0x21, 2));
        // K8 (Athlon 64 X2): family 0xF model 0x23.
        assert_eq!(decode(Vendor::Amd, 0x0002_0F32), (0xF, 0x23, 2));
        // K7 (Athlon): family 6 model 6; AMD does not fold below family 0xF, so a stray
        // extended model there changes nothing.
        assert_eq!(decode(Vendor::Amd, 0x0000_0662), (6, 6, 2));
        assert_eq!(decode(Vendor::Amd, 0x0001_0662), (6, 6, 2));
        assert_eq!(decode(Vendor::Intel, 0x0001_0662), (6, 0x16, 2));
    }

    /// A dump of an Alder Lake core: leaf 0 (maximum leaf `max`), leaf 1 (family 6 model
    /// 0x97 stepping 2), leaf 7 with the hybrid bit as given, leaf 0x1A's EAX.
    fn alder_lake(max: u32, hybrid_bit: bool, leaf_1a: u32) -> CpuidDump {
        let mut dump = CpuidDump::new("synthetic Alder Lake");
        dump.insert(
            0,
            0,
            CpuidResult::new(max, 0x756e_6547, 0x6c65_746e, 0x4965_6e69),
        );
        dump.insert(1, 0, CpuidResult::new(0x0009_0672, 0, 0, 0));
        let edx = if hybrid_bit { LEAF7_EDX_HYBRID } else { 0 };
        dump.insert(7, 0, CpuidResult::new(0, 0, 0, edx));
        dump.insert(0x1A, 0, CpuidResult::new(leaf_1a, 0, 0, 0));
        dump
    }

    #[test]
    fn hybrid_cores_from_leaf_0x1a() {
        let db = Database::shipped().expect("the shipped database loads");
        let detect = |dump: &CpuidDump| {
            detect_model(&db, dump)
                .unwrap()
                .map(|m| m.id.clone())
                .unwrap_or_default()
        };
        let e_core = alder_lake(0x20, true, 0x2000_0001);
        assert_eq!(
            hybrid_core(&e_core).unwrap(),
            Some(HybridCore {
                core_type: HybridCore::ATOM,
                native_model: Some(1)
            })
        );
        assert_eq!(detect(&e_core), "adl_grt");
        let p_core = alder_lake(0x20, true, 0x4000_0001);
        assert_eq!(detect(&p_core), "adl_glc");
        // Leaf 0x1A counts only when leaf 7 says the chip is hybrid and the leaf exists.
        let not_hybrid = alder_lake(0x20, false, 0x2000_0001);
        assert_eq!(hybrid_core(&not_hybrid).unwrap(), None);
        assert_eq!(detect(&not_hybrid), "adl_glc");
        let old_leaves = alder_lake(0x19, true, 0x2000_0001);
        assert_eq!(hybrid_core(&old_leaves).unwrap(), None);
        // A recorded dump keeps leaf 0x1A.
        let text = e_core.to_text();
        let parsed = CpuidDump::parse("again", &text).unwrap();
        assert_eq!(detect(&parsed), "adl_grt");
        let recorded = CpuidDump::record("again", &e_core).unwrap();
        assert_eq!(detect(&recorded), "adl_grt");
    }

    #[test]
    fn named_models_or_the_known_ids() {
        let db = Database::shipped().expect("the shipped database loads");
        assert_eq!(named_model(&db, "P6").unwrap().id, "p6");
        let error = named_model(&db, "pentium9000").unwrap_err();
        assert_eq!(error.kind(), counterhal_hal::ErrorKind::InvalidInput);
        assert!(error.message().contains("`pentium9000`"), "{error}");
        assert!(error.message().contains("p6"), "{error}");
        assert!(error.hint().is_some());
    }

    #[test]
    fn vendors_from_leaf_zero() {
        let intel = CpuidResult::new(0xA, 0x756e_6547, 0x6c65_746e, 0x4965_6e69);
        assert_eq!(vendor(intel), Vendor::Intel);
        let amd = CpuidResult::new(
            0x10,
            u32::from_le_bytes(*b"Auth"),
            u32::from_le_bytes(*b"cAMD"),
            u32::from_le_bytes(*b"enti"),
        );
        assert_eq!(vendor(amd), Vendor::Amd);
    }
}
