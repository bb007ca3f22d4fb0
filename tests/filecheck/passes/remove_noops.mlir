// RUN: byoc-opt %s -p byoc-remove-noops --split-input-file | filecheck %s

// Arithmetic with the identity constant of the op.
func.func @arithmetic(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %one = relay.constant dense<1.0> : tensor<3xf32>
  %zero = relay.constant dense<0.0> : tensor<1x1xf32>
  %0 = relay.multiply %x, %one : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = relay.multiply %one, %0 : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = relay.add %zero, %1 : (tensor<1x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = relay.subtract %2, %zero : (tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
  %4 = relay.divide %3, %one : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %5 = relay.power %4, %one : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %b = relay.constant dense<0.0> : tensor<3xf32>
  %6 = relay.nn.bias_add %5, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %6 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @arithmetic(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
// CHECK-NEXT:  }

// -----

// Movement that moves nothing; a relu of a relu; max/min of a value with
// itself; an unbounded clip; a 1x1 pool.
func.func @movement(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = relay.reshape %x {newshape = array<i64: 0, 0, -1, 4>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %1 = relay.transpose %0 {axes = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %2 = relay.concatenate %1 {axis = 1 : i64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %3 = relay.squeeze %2 {axis = array<i64>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %4 = relay.nn.relu %3 : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %5 = relay.nn.relu %4 : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %6 = relay.maximum %5, %5 : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %7 = relay.clip %6 {a_min = 0xFFF0000000000000 : f64, a_max = 0x7FF0000000000000 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %8 = relay.nn.max_pool2d %7 {pool_size = array<i64: 1, 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %8 : tensor<1x2x3x4xf32>
}

// CHECK-LABEL: func.func @movement(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
// CHECK-NEXT:    %[[R:.*]] = relay.nn.relu %x
// CHECK-NEXT:    func.return %[[R]]
// CHECK-NEXT:  }

// -----

// Kept: a constant that broadcasts x to a larger shape, a constant that is
// not the identity everywhere, a constant on the wrong side, a real pool.
func.func @kept(%x: tensor<3xf32>, %y: tensor<1x1x4x4xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x1x3x3xf32>) {
  %one = relay.constant dense<1.0> : tensor<2x3xf32>
  %mixed = relay.constant dense<[1.0, 1.0, 0.0]> : tensor<3xf32>
  %ones = relay.constant dense<1.0> : tensor<3xf32>
  %0 = relay.multiply %x, %one : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = relay.multiply %x, %mixed : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = relay.divide %ones, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %3 = relay.nn.avg_pool2d %y {pool_size = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x1x3x3xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK:         relay.multiply %x, %one
// CHECK-NEXT:    relay.multiply %x, %mixed
// CHECK-NEXT:    relay.divide %ones, %x
// CHECK-NEXT:    relay.nn.avg_pool2d %y
