// RUN: byoc-opt %s -p byoc-simplify-shapes --split-input-file | filecheck %s

// A chain of reshape-like ops is one reshape of the chain's input.
func.func @reshapes(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %0 = relay.reshape %x {newshape = array<i64: 6, -1>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = relay.expand_dims %0 {axis = 0 : i64} : (tensor<6x4xf32>) -> tensor<1x6x4xf32>
  %2 = relay.nn.batch_flatten %1 : (tensor<1x6x4xf32>) -> tensor<1x24xf32>
  %3 = relay.squeeze %2 : (tensor<1x24xf32>) -> tensor<24xf32>
  func.return %3 : tensor<24xf32>
}

// CHECK-LABEL: func.func @reshapes(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %x {newshape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:    func.return %[[R]]

// -----

// A chain back to the input's shape disappears; an intermediate value with
// another user stays for that user.
func.func @round_trip(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<6xf32>) {
  %0 = relay.reshape %x {newshape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %1 = relay.reshape %0 {newshape = array<i64: 3, 2>} : (tensor<6xf32>) -> tensor<3x2xf32>
  %2 = relay.reshape %1 {newshape = array<i64: 2, 3>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  func.return %2, %0 : tensor<2x3xf32>, tensor<6xf32>
}

// CHECK-LABEL: func.func @round_trip(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<6xf32>) {
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %x {newshape = array<i64: 6>}
// CHECK-NEXT:    func.return %x, %[[R]]

// -----

// Two transposes compose into one; inverse transposes cancel.
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<3x2x4xf32>, tensor<2x3x4xf32>) {
  %0 = relay.transpose %x {axes = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = relay.transpose %0 {axes = array<i64: 0, 2, 1>} : (tensor<3x4x2xf32>) -> tensor<3x2x4xf32>
  %2 = relay.transpose %x {axes = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %3 = relay.transpose %2 {axes = array<i64: 1, 2, 0>} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  func.return %1, %3 : tensor<3x2x4xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<3x2x4xf32>, tensor<2x3x4xf32>) {
// CHECK-NEXT:    %[[T:.*]] = relay.transpose %x {axes = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
// CHECK-NEXT:    func.return %[[T]], %x

// -----

// A transpose that moves only size-1 axes keeps the elements in order: a
// reshape, which then joins the reshape after it.
func.func @unit_axes(%x: tensor<1x8x1x5xf32>) -> tensor<8x5xf32> {
  %0 = relay.transpose %x {axes = array<i64: 2, 1, 0, 3>} : (tensor<1x8x1x5xf32>) -> tensor<1x8x1x5xf32>
  %1 = relay.transpose %0 {axes = array<i64: 1, 0, 2, 3>} : (tensor<1x8x1x5xf32>) -> tensor<8x1x1x5xf32>
  %2 = relay.reshape %1 {newshape = array<i64: 8, 5>} : (tensor<8x1x1x5xf32>) -> tensor<8x5xf32>
  func.return %2 : tensor<8x5xf32>
}

// CHECK-LABEL: func.func @unit_axes(%x: tensor<1x8x1x5xf32>) -> tensor<8x5xf32> {
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %x {newshape = array<i64: 8, 5>} : (tensor<1x8x1x5xf32>) -> tensor<8x5xf32>
// CHECK-NEXT:    func.return %[[R]]

// -----

// A reshape between transposes is a real data movement: nothing to collapse.
func.func @kept(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = relay.transpose %x {axes = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = relay.reshape %0 {newshape = array<i64: 6, 4>} : (tensor<3x2x4xf32>) -> tensor<6x4xf32>
  %2 = relay.transpose %1 : (tensor<6x4xf32>) -> tensor<4x6xf32>
  func.return %2 : tensor<4x6xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK-NEXT:    relay.transpose %x
// CHECK-NEXT:    relay.reshape
// CHECK-NEXT:    relay.transpose

// -----

// A softmax along the last axis of a reshape keeping that axis runs on the
// reshape's input, the reshape after it: a reshape back then cancels it
// (attention's scores between two batch matmuls). log_softmax too.
func.func @softmax_between_reshapes(%x: tensor<6x5x7xf32>) -> (tensor<6x5x7xf32>, tensor<30x7xf32>) {
  %0 = relay.reshape %x {newshape = array<i64: 2, 3, 5, 7>} : (tensor<6x5x7xf32>) -> tensor<2x3x5x7xf32>
  %1 = relay.nn.softmax %0 {axis = 3 : i64} : (tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %2 = relay.reshape %1 {newshape = array<i64: 6, 5, 7>} : (tensor<2x3x5x7xf32>) -> tensor<6x5x7xf32>
  %3 = relay.reshape %x {newshape = array<i64: 30, 7>} : (tensor<6x5x7xf32>) -> tensor<30x7xf32>
  %4 = relay.nn.log_softmax %3 : (tensor<30x7xf32>) -> tensor<30x7xf32>
  func.return %2, %4 : tensor<6x5x7xf32>, tensor<30x7xf32>
}

// CHECK-LABEL: func.func @softmax_between_reshapes(%x: tensor<6x5x7xf32>) -> (tensor<6x5x7xf32>, tensor<30x7xf32>) {
// CHECK-NEXT:    %[[S:.*]] = relay.nn.softmax %x : (tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
// CHECK-NEXT:    %[[L:.*]] = relay.nn.log_softmax %x : (tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %[[L]] {newshape = array<i64: 30, 7>} : (tensor<6x5x7xf32>) -> tensor<30x7xf32>
// CHECK-NEXT:    func.return %[[S]], %[[R]]

// -----

// Not along the last axis, or a reshape that changes the last axis: kept.
func.func @softmax_kept(%x: tensor<6x10xf32>) -> (tensor<2x3x10xf32>, tensor<6x2x5xf32>) {
  %0 = relay.reshape %x {newshape = array<i64: 2, 3, 10>} : (tensor<6x10xf32>) -> tensor<2x3x10xf32>
  %1 = relay.nn.softmax %0 {axis = 1 : i64} : (tensor<2x3x10xf32>) -> tensor<2x3x10xf32>
  %2 = relay.reshape %x {newshape = array<i64: 6, 2, 5>} : (tensor<6x10xf32>) -> tensor<6x2x5xf32>
  %3 = relay.nn.softmax %2 : (tensor<6x2x5xf32>) -> tensor<6x2x5xf32>
  func.return %1, %3 : tensor<2x3x10xf32>, tensor<6x2x5xf32>
}

// CHECK-LABEL: func.func @softmax_kept(%x: tensor<6x10xf32>) -> (tensor<2x3x10xf32>, tensor<6x2x5xf32>) {
// CHECK-NEXT:    %[[A:.*]] = relay.reshape %x {newshape = array<i64: 2, 3, 10>}
// CHECK-NEXT:    %[[B:.*]] = relay.nn.softmax %[[A]] {axis = 1 : i64}
// CHECK-NEXT:    %[[C:.*]] = relay.reshape %x {newshape = array<i64: 6, 2, 5>}
// CHECK-NEXT:    %[[D:.*]] = relay.nn.softmax %[[C]] :
// CHECK-NEXT:    func.return %[[B]], %[[D]]
