//! The driver layer's own tests: what its types guarantee without a device, and the
//! context checks with the emulated driver.

use super::*;

/// `Send`-ness of `T`, decided at compile time by method resolution: the inherent-looking
/// `IsSend` impl applies only when `T: Send`, else autoref falls back to `NotSend`.
struct Probe<T>(PhantomData<T>);
trait IsSend {
    fn is_send(&self) -> bool {
        true
    }
}
impl<T: Send> IsSend for Probe<T> {}
trait NotSend {
    fn is_send(&self) -> bool {
        false
    }
}
impl<T> NotSend for &Probe<T> {}

#[test]
#[expect(
    clippy::needless_borrow,
    reason = "the borrow is the probe: for a T that is not Send, the method resolves on &Probe<T>"
)]
fn the_current_context_proof_stays_on_its_thread() {
    assert!(!(&Probe::<Current<'static>>(PhantomData)).is_send());
    // The probe itself tells the two apart.
    assert!((&Probe::<PrimaryContext>(PhantomData)).is_send());
}

/// A stream made in a context that was then reset, used with the fresh context's proof: the
/// launch path answers CUDA_ERROR_INVALID_CONTEXT without calling the driver. Needs a
/// driver: the emulated one, as `KARGS_CUDA_DRIVER` names it (40-cuda.sh).
#[test]
fn a_stream_refuses_another_contexts_proof() {
    let test = "a_stream_refuses_another_contexts_proof";
    let Some(path) = std::env::var_os("KARGS_CUDA_DRIVER").filter(|p| !p.is_empty()) else {
        println!("SKIPPED {test}: KARGS_CUDA_DRIVER is not set: this test needs a driver");
        return;
    };
    let driver = Driver::load(&path).unwrap();
    let device = driver.device(0).unwrap();
    let mut primary = device.retain_primary_context().unwrap();
    let stream = {
        let current = primary.push().unwrap();
        Stream::new(&current).unwrap()
    };
    primary.reset().unwrap();
    let current = primary.push().unwrap();
    let zeros = [0u8; 4];
    let buffer = DeviceBuffer::alloc(&current, zeros.len()).unwrap();
    let err = stream.scope(&current, |queue| queue.upload_bytes(&zeros, &buffer, 0)).unwrap_err();
    assert_eq!((err.call, err.code), ("cuMemcpyHtoDAsync", CUDA_ERROR_INVALID_CONTEXT));
    let fresh = Stream::new(&current).unwrap();
    assert_eq!(fresh.scope(&current, |queue| queue.upload_bytes(&zeros, &buffer, 0)), Ok(()));
    // A copy past the buffer's end is refused before the driver is called.
    let err = fresh.scope(&current, |queue| queue.upload_bytes(&zeros, &buffer, 1)).unwrap_err();
    assert_eq!((err.call, err.code), ("cuMemcpyHtoDAsync", CUDA_ERROR_INVALID_VALUE));
    drop(buffer);
    drop((fresh, current));
    // The reset destroyed the old stream.
    stream.abandon();
}
