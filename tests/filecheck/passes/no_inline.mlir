// RUN: byoc-opt %s -p convert-loops-to-llvm | filecheck %s --check-prefix=LLVM
// RUN: byoc-opt %s -p convert-loops-to-emitc -t c | filecheck %s --check-prefix=C

// A `no_inline` function (a part of a split function) stays a function of its
// own on both exits: `no_inline` in the llvm dialect (LLVM's noinline),
// GNU C's noinline attribute in C.

// LLVM: llvm.func internal @part(%{{.*}}: !llvm.ptr {llvm.noalias}) -> i32 attributes {no_inline}
// C:    __attribute__((noinline)) static int32_t part(float* restrict v0) {
func.func private @part(%out: memref<f32>) -> i32 attributes {no_inline} {
  %one = arith.constant 1.0 : f32
  memref.store %one, %out[] : memref<f32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
func.func @caller(%out: memref<f32>) -> i32 {
  %st = func.call @part(%out) : (memref<f32>) -> i32
  func.return %st : i32
}
