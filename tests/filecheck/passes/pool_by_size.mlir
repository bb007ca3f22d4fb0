// RUN: byoc-opt %s -p convert-relay-to-loops --split-input-file | filecheck %s

// A host function's buffers of 64 KiB and more are pooled by size: each is a
// memref.view of the smallest free i8 buffer that holds it, so a network's
// activations of different shapes cycle through a few buffers that stay in
// cache. Here %b (128 KiB) takes the buffer %a (256 KiB) leaves, and %c
// (256 KiB, another shape) the one %a had; %d, 8 floats, stays typed.
func.func @main(%x: tensor<1x16x64x64xf32>) -> tensor<8xf32> {
  %a = relay.nn.relu %x : (tensor<1x16x64x64xf32>) -> tensor<1x16x64x64xf32>
  %b = relay.nn.max_pool2d %a {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x64x64xf32>) -> tensor<1x16x32x32xf32>
  %c = relay.image.resize2d %b {size = array<i64: 64, 64>, method = "nearest_neighbor"} : (tensor<1x16x32x32xf32>) -> tensor<1x16x64x64xf32>
  %d = relay.sum %c {axis = array<i64: 0, 2, 3>} : (tensor<1x16x64x64xf32>) -> tensor<16xf32>
  %e = relay.strided_slice %d {begin = array<i64: 0>, end = array<i64: 8>, strides = array<i64: 1>} : (tensor<16xf32>) -> tensor<8xf32>
  func.return %e : tensor<8xf32>
}

// CHECK-LABEL: func.func @main(
// CHECK:         %[[A:.*]] = memref.alloc() : memref<262144xi8>
// CHECK-NEXT:    %{{.*}} = memref.view %[[A]][%{{.*}}][] : memref<262144xi8> to memref<1x16x64x64xf32>
// CHECK:         %[[B:.*]] = memref.alloc() : memref<65536xi8>
// CHECK-NEXT:    %{{.*}} = memref.view %[[B]][%{{.*}}][] : memref<65536xi8> to memref<1x16x32x32xf32>
// CHECK-NOT:     memref.alloc() : memref<{{[0-9]+}}xi8>
// CHECK:         %{{.*}} = memref.view %[[A]][%{{.*}}][] : memref<262144xi8> to memref<1x16x64x64xf32>
// CHECK:         %d = memref.alloc() : memref<16xf32>
// CHECK-DAG:     memref.dealloc %[[A]] : memref<262144xi8>
// CHECK-DAG:     memref.dealloc %[[B]] : memref<65536xi8>
