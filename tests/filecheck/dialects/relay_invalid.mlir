// RUN: byoc-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @main(%a: tensor<10x10xf32>, %b: tensor<3xf32>) -> tensor<10x10xf32> {
  %0 = relay.add %a, %b : (tensor<10x10xf32>, tensor<3xf32>) -> tensor<10x10xf32>
  func.return %0 : tensor<10x10xf32>
}
// CHECK: relay_invalid.mlir:4:3: error: 'relay.add': operand shapes [10, 10] and [3] do not broadcast (dimension 1: 10 vs 3)

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x4xf32> {
  %0 = relay.multiply %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
// CHECK: relay_invalid.mlir:12:3: error: 'relay.multiply': result type tensor<2x4xf32> does not match the inferred type tensor<2x3xf32>

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf64>) -> tensor<2x3xf32> {
  %0 = relay.subtract %a, %b : (tensor<2x3xf32>, tensor<3xf64>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_invalid.mlir:20:3: error: 'relay.subtract': operands have different element types f32 and f64

// -----

func.func @main(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %0 = relay.tanh %a : (tensor<?x3xf32>) -> tensor<?x3xf32>
  func.return %0 : tensor<?x3xf32>
}
// CHECK: relay_invalid.mlir:28:3: error: 'relay.tanh': data must have a static shape, got tensor<?x3xf32>

// -----

func.func @main(%a: tensor<3xi32>) -> tensor<3xi32> {
  %0 = relay.nn.relu %a : (tensor<3xi32>) -> tensor<3xi32>
  func.return %0 : tensor<3xi32>
}
// CHECK: relay_invalid.mlir:36:3: error: 'relay.nn.relu': data must have a float element type, got i32

// -----

func.func @main(%a: tensor<3xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : (tensor<3xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: relay_invalid.mlir:44:3: error: 'relay.exp': result type tensor<4xf32> does not match the inferred type tensor<3xf32>

// -----

func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.divide %a, %a : (tensor<3xf32>, tensor<3xf32>) -> memref<3xf32>
  func.return %a : tensor<3xf32>
}
// CHECK: relay_invalid.mlir:52:3
// CHECK: memref<3xf32> should be of base attribute tensor

// -----

func.func @main(%a: tensor<3xf32>, %b: tensor<3xi32>) -> tensor<3xi1> {
  %0 = relay.less %a, %b : (tensor<3xf32>, tensor<3xi32>) -> tensor<3xi1>
  func.return %0 : tensor<3xi1>
}
// CHECK: relay_invalid.mlir:61:3: error: 'relay.less': operands have different element types f32 and i32

// -----

func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.equal %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: relay_invalid.mlir:69:3: error: 'relay.equal': result type tensor<3xf32> does not match the inferred type tensor<3xi1>

// -----

func.func @main(%a: tensor<3xi1>, %b: tensor<3xi8>) -> tensor<3xi1> {
  %0 = relay.logical_and %a, %b : (tensor<3xi1>, tensor<3xi8>) -> tensor<3xi1>
  func.return %0 : tensor<3xi1>
}
// CHECK: relay_invalid.mlir:77:3: error: 'relay.logical_and': rhs must have element type i1, got i8

// -----

func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.logical_not %a : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: relay_invalid.mlir:85:3: error: 'relay.logical_not': data must have element type i1, got f32

// -----

func.func @main(%a: tensor<3xi1>) -> tensor<3xi1> {
  %0 = relay.add %a, %a : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  func.return %0 : tensor<3xi1>
}
// CHECK: relay_invalid.mlir:93:3: error: 'relay.add': lhs must have a float or integer element type, got i1
