// RUN: byoc-opt %s -p 'convert-loops-to-llvm,byoc-weights-to-blob{symbol=byoc_w min-bytes=64}' | filecheck %s

// Constants of at least 64 bytes leave the module for the weights blob, each at
// a 64-byte aligned offset (@a, 128 bytes, at 0; @b at 128); every
// function that reads one loads the blob pointer once, in its entry block, and
// reaches each weight by a byte offset from it. The small constant @s stays.

// CHECK:       llvm.mlir.global external @byoc_w() {addr_space = 0 : i32, alignment = 8 : i64} : !llvm.ptr
// CHECK-NOT:   @a(
// CHECK-NOT:   @b(
// CHECK:       llvm.mlir.global internal constant @s(dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>)
// CHECK-LABEL: llvm.func @reads_weights(
// CHECK-NEXT:    %[[P:.*]] = llvm.mlir.addressof @byoc_w : !llvm.ptr
// CHECK-NEXT:    %[[BASE:.*]] = llvm.load %[[P]] {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:         %{{.*}} = llvm.getelementptr inbounds %[[BASE]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:         %{{.*}} = llvm.getelementptr inbounds %[[BASE]][128] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:         %{{.*}} = llvm.mlir.addressof @s : !llvm.ptr
// CHECK-LABEL: llvm.func @no_weights(
// CHECK-NOT:     @byoc_w
// CHECK:         llvm.return
"memref.global"() <{sym_name = "a", sym_visibility = "private", type = memref<4x8xf32>, initial_value = dense<0.5> : tensor<4x8xf32>, constant}> : () -> ()
"memref.global"() <{sym_name = "b", sym_visibility = "private", type = memref<16xf32>, initial_value = dense<2.0> : tensor<16xf32>, constant}> : () -> ()
"memref.global"() <{sym_name = "s", sym_visibility = "private", type = memref<2xf32>, initial_value = dense<[1.0, 2.0]> : tensor<2xf32>, constant}> : () -> ()
func.func @reads_weights(%out: memref<f32>) -> i32 {
  %c1 = arith.constant 1 : index
  %a = memref.get_global @a : memref<4x8xf32>
  %b = memref.get_global @b : memref<16xf32>
  %s = memref.get_global @s : memref<2xf32>
  %x = memref.load %a[%c1, %c1] : memref<4x8xf32>
  %y = memref.load %b[%c1] : memref<16xf32>
  %z = memref.load %s[%c1] : memref<2xf32>
  %xy = arith.addf %x, %y : f32
  %xyz = arith.addf %xy, %z : f32
  memref.store %xyz, %out[] : memref<f32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
func.func @no_weights(%out: memref<f32>) -> i32 {
  %one = arith.constant 1.0 : f32
  memref.store %one, %out[] : memref<f32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
