// RUN: byoc-opt %s -p convert-relay-to-loops | filecheck %s
// RUN: byoc-opt %s -p convert-relay-to-loops,convert-relay-to-loops | filecheck %s

// The lowerings of passes/lower_shapes.py, through convert-relay-to-loops.

// Constants become module-level private constant globals, at the top, one per
// distinct value (see @constant and @shared below).
// CHECK:       builtin.module {
// CHECK-NEXT:    "memref.global"() <{sym_name = "__constant_3xf32", type = memref<3xf32>, initial_value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>, sym_visibility = "private", constant, alignment = 64 : i64}> : () -> ()
// CHECK-NEXT:    "memref.global"() <{sym_name = "__constant_3xf32_0", type = memref<3xf32>, initial_value = dense<[4.000000e+00, 5.000000e+00, 6.000000e+00]> : tensor<3xf32>, sym_visibility = "private", constant, alignment = 64 : i64}> : () -> ()
// CHECK-NOT:     memref.global

// Transpose: a nest over the output, loading the input at permuted indices.
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = relay.transpose %x {axes = array<i64: 2, 0, -2>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  func.return %0 : tensor<4x2x3xf32>
}

// CHECK-LABEL:  func.func @transpose(%x: memref<2x3x4xf32>, %out0: memref<4x2x3xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c4 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c2 step %c1 {
// CHECK-NEXT:         scf.for %i2 = %c0 to %c3 step %c1 {
// CHECK-NEXT:           %[[V:.*]] = memref.load %x[%i1, %i2, %i0] : memref<2x3x4xf32>
// CHECK-NEXT:           memref.store %[[V]], %out0[%i0, %i1, %i2] : memref<4x2x3xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32

// Concatenate: one copy nest per operand, the later ones offset along the axis.
func.func @concatenate(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = relay.concatenate %a, %b {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// CHECK-LABEL:  func.func @concatenate(%a: memref<2x3xf32>, %b: memref<2x1xf32>, %out0: memref<2x4xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c3 step %c1 {
// CHECK-NEXT:         %[[A:.*]] = memref.load %a[%i0, %i1] : memref<2x3xf32>
// CHECK-NEXT:         memref.store %[[A]], %out0[%i0, %i1] : memref<2x4xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %[[J:.*]] = %c0 to %c1 step %c1 {
// CHECK-NEXT:         %[[B:.*]] = memref.load %b[%[[I]], %[[J]]] : memref<2x1xf32>
// CHECK-NEXT:         %[[K:.*]] = arith.addi %[[J]], %c3 : index
// CHECK-NEXT:         memref.store %[[B]], %out0[%[[I]], %[[K]]] : memref<2x4xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32

// Reshape that merges dims: iterate the input, compute the one output index.
func.func @flatten(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %0 = relay.reshape %x {newshape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  func.return %0 : tensor<2x12xf32>
}

// CHECK-LABEL:  func.func @flatten(%x: memref<2x3x4xf32>, %out0: memref<2x12xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c3 step %c1 {
// CHECK-NEXT:         scf.for %i2 = %c0 to %c4 step %c1 {
// CHECK-NEXT:           %[[S:.*]] = arith.muli %i1, %c4 : index
// CHECK-NEXT:           %[[J:.*]] = arith.addi %[[S]], %i2 : index
// CHECK-NEXT:           %[[V:.*]] = memref.load %x[%i0, %i1, %i2] : memref<2x3x4xf32>
// CHECK-NEXT:           memref.store %[[V]], %out0[%i0, %[[J]]] : memref<2x12xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32

// Reshape split differently on both sides: iterate the output, divide for the input.
func.func @regroup(%x: tensor<6x4xf32>) -> tensor<3x8xf32> {
  %0 = relay.reshape %x {newshape = array<i64: 3, 8>} : (tensor<6x4xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}

// CHECK-LABEL:  func.func @regroup(%x: memref<6x4xf32>, %out0: memref<3x8xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c3 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c8 step %c1 {
// CHECK-NEXT:         %[[S:.*]] = arith.muli %i0, %c8 : index
// CHECK-NEXT:         %[[L:.*]] = arith.addi %[[S]], %i1 : index
// CHECK-NEXT:         %[[R:.*]] = arith.divui %[[L]], %c4 : index
// CHECK-NEXT:         %[[C:.*]] = arith.remui %[[L]], %c4 : index
// CHECK-NEXT:         %[[V:.*]] = memref.load %x[%[[R]], %[[C]]] : memref<6x4xf32>
// CHECK-NEXT:         memref.store %[[V]], %out0[%i0, %i1] : memref<3x8xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32

// Squeeze: size-1 dims get no loop and index 0.
func.func @squeeze(%x: tensor<1x3x1x4xf32>) -> tensor<3x4xf32> {
  %0 = relay.squeeze %x : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// CHECK-LABEL:  func.func @squeeze(%x: memref<1x3x1x4xf32>, %out0: memref<3x4xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c3 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c4 step %c1 {
// CHECK-NEXT:         %[[V:.*]] = memref.load %x[%c0, %i0, %c0, %i1] : memref<1x3x1x4xf32>
// CHECK-NEXT:         memref.store %[[V]], %out0[%i0, %i1] : memref<3x4xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32

// A constant is read through memref.get_global, used twice without a copy, never
// allocated or freed, and copied only into the output that returns it.
func.func @constant(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %w = relay.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = relay.add %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = relay.multiply %0, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %1, %w : tensor<2x3xf32>, tensor<3xf32>
}

// CHECK-LABEL:  func.func @constant(%x: memref<2x3xf32>, %out0: memref<2x3xf32>, %out1: memref<3xf32>) -> i32 {
// (add and multiply are fused: one nest, one load of %w per element.)
// CHECK:          %w = memref.get_global @__constant_3xf32 : memref<3xf32>
// CHECK-NOT:      memref.alloc
// CHECK:              %[[X:.*]] = memref.load %x[%i0, %i1] : memref<2x3xf32>
// CHECK-NEXT:         %[[W:.*]] = memref.load %w[%i1] : memref<3xf32>
// CHECK-NEXT:         %[[S:.*]] = arith.addf %[[X]], %[[W]] : f32
// CHECK-NEXT:         %[[P:.*]] = arith.mulf %[[S]], %[[W]] : f32
// CHECK-NEXT:         memref.store %[[P]], %out0[%i0, %i1] : memref<2x3xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NOT:      memref.dealloc
// CHECK-NEXT:     scf.for %[[I:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:       %[[V:.*]] = memref.load %w[%[[I]]] : memref<3xf32>
// CHECK-NEXT:       memref.store %[[V]], %out1[%[[I]]] : memref<3xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32

// Equal constants share a global; a new value gets a fresh name.
func.func @shared(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = relay.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = relay.constant dense<[4.0, 5.0, 6.0]> : tensor<3xf32>
  %0 = relay.add %x, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = relay.add %0, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %1 : tensor<3xf32>
}

// CHECK-LABEL:  func.func @shared(%x: memref<3xf32>, %out0: memref<3xf32>) -> i32 {
// CHECK:          %a = memref.get_global @__constant_3xf32 : memref<3xf32>
// CHECK:          %b = memref.get_global @__constant_3xf32_0 : memref<3xf32>
