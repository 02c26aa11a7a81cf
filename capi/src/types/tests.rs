use super::*;
use kernel_args_core::{GuestMemory, MAX_KERNEL_ARGS, parse_argv};

#[test]
fn argv_errors_round_trip() {
    let memory = GuestMemory::length_only(64);
    let cases: [&[u8]; 6] = [
        &[0x42],
        &[0x01, 0, 0, 0, 0, 0x06, 1, 2],
        &[0x07, 60, 0, 0, 0, 5, 0, 0, 0],
        &[0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        &[0u8; 4097],
        &[0x05, 1, 0, 0, 0, 0x05, 2, 0, 0, 0],
    ];
    for buf in cases {
        let e = match parse_argv::<1>(buf, &memory) {
            Err(e) => e,
            Ok(_) => panic!("{buf:?} was accepted"),
        };
        let c = KargsError::from_argv(&e);
        assert_eq!(c.abi_code, e.code().code());
        assert_eq!(KargsErrorKind::from_u32(c.kind).unwrap().name().to_str().unwrap(), e.kind().name());
        assert_eq!((c.record_index as usize, c.byte_offset as usize), (e.index(), e.offset()));
        assert_eq!(c.decode(), Some(Decoded::Argv(e)), "{e}");
    }
    assert_eq!(MAX_KERNEL_ARGS, 128);
}

#[test]
fn region_and_shape_errors_round_trip() {
    for (p, l, m) in [(-1, 0, 64), (0, -3, 64), (i32::MAX, 1, 1 << 32), (100, 8, 64), (i32::MIN, i32::MIN, 0)]
    {
        let e = kernel_args::check_args_region(p, l, m).unwrap_err();
        let c = KargsError::from_region(&e, p, l, m);
        assert_eq!(c.abi_code, -2);
        assert_eq!(c.decode(), Some(Decoded::Region(e)));
    }
    let limits = kernel_args::LaunchLimits::DEFAULT;
    for (grid, block, shm) in [
        ([0, 1, 1], [1, 1, 1], 0),
        ([1, 1, 1], [1, 1, 65], 0),
        ([1, 1, 1], [1024, 2, 1], 0),
        ([1, 1, 1], [1, 1, 1], -8),
    ] {
        let e = kernel_args::check_launch_shape(grid, block, shm, &limits).unwrap_err();
        let c = KargsError::from_shape(&e);
        assert_eq!(c.abi_code, -8);
        assert_eq!(c.decode(), Some(Decoded::Shape(e)));
    }
    let c = KargsError::null_argument(KargsFunction::Parse, 6, 0);
    assert_eq!(c.decode(), Some(Decoded::Null { function: KargsFunction::Parse, position: 6, len: 0 }));
}

#[test]
fn inconsistent_structs_do_not_decode() {
    let good = KargsError::from_argv(&ArgvError::new(ErrorKind::UnknownTag { tag: 0x42 }, 3, 17));
    assert!(good.decode().is_some());
    for bad in [
        KargsError { abi_code: -2, ..good },
        KargsError { kind: 99, ..good },
        KargsError { detail: [0x01, 0, 0], ..good },
        KargsError { detail: [0x142, 0, 0], ..good },
        KargsError { detail: [0x42, 1, 0], ..good },
        KargsError { abi_code: 0, kind: 0, ..good },
        KargsError { detail: [9, 0, 0], ..KargsError::null_argument(KargsFunction::Parse, 0, 1) },
        KargsError { detail: [1, 8, 0], ..KargsError::null_argument(KargsFunction::Parse, 0, 1) },
        KargsError { record_index: 1, ..KargsError::null_argument(KargsFunction::Parse, 0, 1) },
    ] {
        assert_eq!(bad.decode(), None, "{bad:?}");
    }
    assert_eq!(KargsError::NONE.decode(), Some(Decoded::None));
}

#[test]
fn kinds_have_unique_values_and_core_names() {
    for (i, k) in KargsErrorKind::ALL.iter().enumerate() {
        assert_eq!(KargsErrorKind::from_u32(*k as u32), Some(*k));
        assert!(KargsErrorKind::ALL[..i].iter().all(|o| *o as u32 != *k as u32));
    }
    let core_kinds = [
        (KargsErrorKind::BufferTooLong, ErrorKind::BufferTooLong { len: 0, max: 0 }),
        (KargsErrorKind::TooManyRecords, ErrorKind::TooManyRecords { max: 0 }),
        (KargsErrorKind::UnknownTag, ErrorKind::UnknownTag { tag: 0 }),
        (
            KargsErrorKind::TruncatedRecord,
            ErrorKind::TruncatedRecord { tag: ArgTag::I32, needed: 4, present: 0 },
        ),
        (
            KargsErrorKind::WindowOutOfBounds,
            ErrorKind::WindowOutOfBounds { guest_offset: 0, len: 0, memory_len: 0 },
        ),
    ];
    for (k, core) in core_kinds {
        assert_eq!(k.name().to_str().unwrap(), core.name());
        assert_eq!(k.abi_code(), core.code().code());
    }
}
