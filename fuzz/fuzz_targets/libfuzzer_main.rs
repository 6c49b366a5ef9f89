// The fuzz targets' `main`, included by each of them: it hands the
// command line to libFuzzer's driver. Defining `main` here, instead of
// taking libFuzzer's with `#![no_main]`, matters: the MLIR archives that
// mlir-sys links include libMLIRMlirOptMain.a, whose `main` (mlir-opt's)
// the linker would otherwise pick, and which rejects libFuzzer's flags.

unsafe extern "C" {
    fn LLVMFuzzerRunDriver(
        argc: *mut std::ffi::c_int,
        argv: *mut *mut *mut std::ffi::c_char,
        callback: unsafe extern "C" fn(*const u8, usize) -> std::ffi::c_int,
    ) -> std::ffi::c_int;
    fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> std::ffi::c_int;
}

fn main() {
    let arguments: Vec<std::ffi::CString> = std::env::args_os()
        .map(|argument| {
            use std::os::unix::ffi::OsStringExt;
            std::ffi::CString::new(argument.into_vec()).unwrap_or_default()
        })
        .collect();
    let mut pointers: Vec<*mut std::ffi::c_char> = arguments
        .iter()
        .map(|argument| argument.as_ptr().cast_mut())
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect();
    let mut argc = arguments.len() as std::ffi::c_int;
    let mut argv = pointers.as_mut_ptr();
    // SAFETY: argc and argv describe NUL-terminated strings that outlive
    // the driver; the callback is libfuzzer-sys's entry.
    let status = unsafe { LLVMFuzzerRunDriver(&mut argc, &mut argv, LLVMFuzzerTestOneInput) };
    std::process::exit(status);
}
