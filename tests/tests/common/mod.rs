//! What the test files that compare the core with the specification model share.

use kernel_args_core::ArgvError;
use kernel_args_testkit::model;

/// The core's error in the model's terms (every detail included: the caps and the window's
/// memory length, so comparing rejections also compares them), after checking that the core's
/// kind name and ABI code agree with the model's for that failure.
pub fn core_rejection(e: &ArgvError) -> model::Rejection {
    let rejection = model::Rejection::from(e);
    let failure = rejection.failure;
    assert_eq!(e.kind().name(), failure.kind());
    assert_eq!((e.code().code(), e.code().name()), (failure.code(), failure.code_name()));
    rejection
}
