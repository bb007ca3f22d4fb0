// RUN: byoc-opt %s -p byoc-fold-scale-shift | filecheck %s

// A scale by one value folds through a product of two computed operands
// (batch_matmul, matmul) and the reshapes and transposes around it into the
// dense (and bias) producing either operand: attention's (Q K^T) / sqrt(d).

// CHECK-LABEL: func.func @attention_scores(
// CHECK:         %[[W:.*]] = relay.constant dense<1.250000e-01> : tensor<8x8xf32>
// CHECK-NEXT:    %[[Q:.*]] = relay.nn.dense %x, %[[W]]
// CHECK-NEXT:    %[[B:.*]] = relay.constant dense<2.500000e-01> : tensor<8xf32>
// CHECK-NEXT:    %[[QB:.*]] = relay.nn.bias_add %[[Q]], %[[B]] {axis = 2 : i64}
// CHECK-NEXT:    %[[H:.*]] = relay.reshape %[[QB]] {newshape = array<i64: 1, 4, 2, 4>}
// CHECK-NEXT:    %[[T:.*]] = relay.transpose %[[H]] {axes = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %[[T]] {newshape = array<i64: 2, 4, 4>}
// CHECK-NEXT:    %[[S:.*]] = relay.nn.batch_matmul %[[R]], %k
// CHECK-NEXT:    %[[O:.*]] = relay.reshape %[[S]] {newshape = array<i64: 1, 2, 4, 4>}
// CHECK-NEXT:    func.return %[[O]]
func.func @attention_scores(%x: tensor<1x4x8xf32>, %k: tensor<2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = relay.constant dense<0.5> : tensor<8x8xf32>
  %b = relay.constant dense<1.0> : tensor<8xf32>
  %c = relay.constant dense<4.0> : tensor<f32>
  %0 = relay.nn.dense %x, %w : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %1 = relay.nn.bias_add %0, %b {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %2 = relay.reshape %1 {newshape = array<i64: 1, 4, 2, 4>} : (tensor<1x4x8xf32>) -> tensor<1x4x2x4xf32>
  %3 = relay.transpose %2 {axes = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %4 = relay.reshape %3 {newshape = array<i64: 2, 4, 4>} : (tensor<1x2x4x4xf32>) -> tensor<2x4x4xf32>
  %5 = relay.nn.batch_matmul %4, %k : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %6 = relay.reshape %5 {newshape = array<i64: 1, 2, 4, 4>} : (tensor<2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %7 = relay.divide %6, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  func.return %7 : tensor<1x2x4x4xf32>
}

// The second operand's producer, when the first is an argument; a multiply.
// CHECK-LABEL: func.func @second_operand(
// CHECK:         %[[W:.*]] = relay.constant dense<1.500000e+00> : tensor<3x5xf32>
// CHECK-NEXT:    %[[D:.*]] = relay.nn.dense %y, %[[W]]
// CHECK-NEXT:    %[[M:.*]] = relay.nn.matmul %a, %[[D]]
// CHECK-NEXT:    func.return %[[M]]
func.func @second_operand(%a: tensor<2x4xf32>, %y: tensor<4x5xf32>) -> tensor<2x3xf32> {
  %w = relay.constant dense<0.5> : tensor<3x5xf32>
  %c = relay.constant dense<3.0> : tensor<1x1xf32>
  %0 = relay.nn.dense %y, %w : (tensor<4x5xf32>, tensor<3x5xf32>) -> tensor<4x3xf32>
  %1 = relay.nn.matmul %a, %0 : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %2 = relay.multiply %c, %1 : (tensor<1x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}

// Not folded: the operand's dense output has another user (it would see the
// scale), a per-element scale (it does not commute with the product), and a
// division by zero.
// CHECK-LABEL: func.func @not_folded(
// CHECK-COUNT-3: relay.divide
func.func @not_folded(%x: tensor<2x4x4xf32>, %k: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %w = relay.constant dense<0.5> : tensor<4x4xf32>
  %c = relay.constant dense<2.0> : tensor<f32>
  %v = relay.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %z = relay.constant dense<0.0> : tensor<f32>
  %0 = relay.nn.dense %x, %w : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  %1 = relay.nn.batch_matmul %0, %k : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %2 = relay.divide %1, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %3 = relay.nn.dense %x, %w : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  %4 = relay.nn.batch_matmul %3, %k : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %5 = relay.divide %4, %v : (tensor<2x4x4xf32>, tensor<4xf32>) -> tensor<2x4x4xf32>
  %6 = relay.nn.dense %x, %w : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  %7 = relay.nn.batch_matmul %6, %k : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %8 = relay.divide %7, %z : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  func.return %0, %2, %5, %8 : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
}
