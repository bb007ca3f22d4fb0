// RUN: byoc-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// One case per verifier error of relay.TRANSFORM_OPS, and of element types.

func.func @main(%t: tensor<10x4xf32>, %ids: tensor<3xf32>) -> tensor<3x4xf32> {
  %0 = relay.take %t, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}
// CHECK: relay_transform_invalid.mlir:6:3: error: 'relay.take': indices must have element type i32 or i64, got f32

// -----

func.func @main(%t: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = relay.take %t, %ids {axis = 2 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}
// CHECK: relay_transform_invalid.mlir:14:3: error: 'relay.take': axis 2 is out of range for rank 2

// -----

func.func @main(%t: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = relay.take %t, %ids {axis = 0 : i64, mode = "raise"} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}
// CHECK: relay_transform_invalid.mlir:22:3: error: 'relay.take': mode "raise" is not one of clip, wrap, fast

// -----

func.func @main(%t: tensor<2x4xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3xf32> {
  %0 = relay.take %t, %ids {axis = 1 : i64, batch_dims = 1 : i64} : (tensor<2x4xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_transform_invalid.mlir:30:3: error: 'relay.take': batch_dims 1 is not supported (only 0)

// -----

func.func @main(%t: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x5xf32> {
  %0 = relay.take %t, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x5xf32>
  func.return %0 : tensor<3x5xf32>
}
// CHECK: relay_transform_invalid.mlir:38:3: error: 'relay.take': result type tensor<3x5xf32> does not match the inferred type tensor<3x4xf32>

// -----

func.func @main(%a: tensor<3xi64>) -> tensor<3xi64> {
  %0 = relay.nn.relu %a : (tensor<3xi64>) -> tensor<3xi64>
  func.return %0 : tensor<3xi64>
}
// CHECK: relay_transform_invalid.mlir:46:3: error: 'relay.nn.relu': data must have a float element type, got i64

// -----

func.func @main(%a: tensor<3xi4>) -> tensor<3xi4> {
  %0 = relay.transpose %a : (tensor<3xi4>) -> tensor<3xi4>
  func.return %0 : tensor<3xi4>
}
// CHECK: relay_transform_invalid.mlir:54:3: error: 'relay.transpose': data must have a float, integer or i1 element type, got i4

// -----

func.func @main(%d: tensor<3x4xf32>, %i: tensor<4x2xi64>) -> tensor<4x2xf32> {
  %0 = relay.gather %d, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}
// CHECK: relay_transform_invalid.mlir:62:3: error: 'relay.gather': indices have 4 elements along axis 0 but data has 3

// -----

func.func @main(%d: tensor<3x4xf32>, %i: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = relay.gather %d, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}
// CHECK: relay_transform_invalid.mlir:70:3: error: 'relay.gather': indices must have element type i32 or i64, got f32
