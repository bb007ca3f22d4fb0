// RUN: byoc-opt %s -p convert-loops-to-llvm --split-input-file --verify-diagnostics | filecheck %s

// CHECK: @main: error: convert-loops-to-llvm cannot lower 'memref.copy': it is not an op of the loop-level IR (docs/architecture.md)
func.func @main(%a: memref<4xf32>, %out: memref<4xf32>) -> i32 {
  "memref.copy"(%a, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

// -----

// CHECK: @main: error: convert-loops-to-llvm cannot lower 'math.cbrt'
func.func @main(%a: memref<f32>) -> i32 {
  %x = memref.load %a[] : memref<f32>
  %y = math.cbrt %x : f32
  memref.store %y, %a[] : memref<f32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

// -----

// CHECK: @main: error: convert-loops-to-llvm cannot lower 'scf.for': iter_args are not loop-level IR; accumulate through a memref
func.func @main(%a: memref<4xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %x = memref.load %a[%i] : memref<4xf32>
    %s = arith.addf %acc, %x : f32
    scf.yield %s : f32
  }
  memref.store %sum, %a[%c0] : memref<4xf32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

// -----

// CHECK: @main: error: convert-loops-to-llvm cannot lower 'memref.load': memref<4xf32, strided<[2]>> has a layout; memrefs must be row-major and contiguous
func.func @main(%a: memref<4xf32, strided<[2]>>) -> i32 {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<4xf32, strided<[2]>>
  memref.store %x, %a[%c0] : memref<4xf32, strided<[2]>>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
