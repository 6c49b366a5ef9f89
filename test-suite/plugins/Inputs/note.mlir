// Input of mlir-plugins.test: the example dialect's operation, good and bad.
"example.note"() {text = "hello"} : () -> ()

// -----

// expected-error @+1 {{'example.note' op needs a string attribute 'text'}}
"example.note"() : () -> ()
