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

// -----

// An additive attention mask [1, 1, 1, S] between the 4-d scores and their
// softmax: the add moves before the reshape (the mask reshaped to the trailing
// axes the reshape keeps), and the reshapes around the softmax cancel.
func.func @mask_before_softmax(%x: tensor<6x5x7xf32>, %m: tensor<1x1x1x7xf32>) -> tensor<6x5x7xf32> {
  %0 = relay.reshape %x {newshape = array<i64: 2, 3, 5, 7>} : (tensor<6x5x7xf32>) -> tensor<2x3x5x7xf32>
  %1 = relay.add %0, %m : (tensor<2x3x5x7xf32>, tensor<1x1x1x7xf32>) -> tensor<2x3x5x7xf32>
  %2 = relay.nn.softmax %1 {axis = 3 : i64} : (tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %3 = relay.reshape %2 {newshape = array<i64: 6, 5, 7>} : (tensor<2x3x5x7xf32>) -> tensor<6x5x7xf32>
  func.return %3 : tensor<6x5x7xf32>
}

// CHECK-LABEL: func.func @mask_before_softmax(%x: tensor<6x5x7xf32>, %m: tensor<1x1x1x7xf32>) -> tensor<6x5x7xf32> {
// CHECK-NEXT:    %[[M:.*]] = relay.reshape %m {newshape = array<i64: 1, 7>} : (tensor<1x1x1x7xf32>) -> tensor<1x7xf32>
// CHECK-NEXT:    %[[A:.*]] = relay.add %x, %[[M]] : (tensor<6x5x7xf32>, tensor<1x7xf32>) -> tensor<6x5x7xf32>
// CHECK-NEXT:    %[[S:.*]] = relay.nn.softmax %[[A]] : (tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
// CHECK-NEXT:    func.return %[[S]]

// -----

// Either side, any elementwise binary op; a mask [S, S] (rows too) and a rank
// no larger than the kept axes need no reshape; the reshape's other users
// keep it.
func.func @mask_first(%x: tensor<6x5x7xf32>, %m: tensor<5x7xf32>, %c: tensor<7xf32>) -> (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) {
  %0 = relay.reshape %x {newshape = array<i64: 2, 3, 5, 7>} : (tensor<6x5x7xf32>) -> tensor<2x3x5x7xf32>
  %1 = relay.subtract %m, %0 : (tensor<5x7xf32>, tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %2 = relay.multiply %0, %c : (tensor<2x3x5x7xf32>, tensor<7xf32>) -> tensor<2x3x5x7xf32>
  func.return %1, %2, %0 : tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>
}

// CHECK-LABEL: func.func @mask_first
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %x {newshape = array<i64: 2, 3, 5, 7>}
// CHECK-NEXT:    %[[S:.*]] = relay.subtract %m, %x : (tensor<5x7xf32>, tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
// CHECK-NEXT:    %[[SR:.*]] = relay.reshape %[[S]] {newshape = array<i64: 2, 3, 5, 7>}
// CHECK-NEXT:    %[[P:.*]] = relay.multiply %x, %c : (tensor<6x5x7xf32>, tensor<7xf32>) -> tensor<6x5x7xf32>
// CHECK-NEXT:    %[[PR:.*]] = relay.reshape %[[P]] {newshape = array<i64: 2, 3, 5, 7>}
// CHECK-NEXT:    func.return %[[SR]], %[[PR]], %[[R]]

// -----

// A mask varying along an axis the reshape changes (a mask row per batch of
// 2 when the scores' 6 products are 2 batches of 3 heads), or one widening
// the result: kept.
func.func @mask_kept(%x: tensor<6x5x7xf32>, %m: tensor<2x1x1x7xf32>, %w: tensor<4x1x1x1x7xf32>) -> (tensor<2x3x5x7xf32>, tensor<4x2x3x5x7xf32>) {
  %0 = relay.reshape %x {newshape = array<i64: 2, 3, 5, 7>} : (tensor<6x5x7xf32>) -> tensor<2x3x5x7xf32>
  %1 = relay.add %0, %m : (tensor<2x3x5x7xf32>, tensor<2x1x1x7xf32>) -> tensor<2x3x5x7xf32>
  %2 = relay.add %0, %w : (tensor<2x3x5x7xf32>, tensor<4x1x1x1x7xf32>) -> tensor<4x2x3x5x7xf32>
  func.return %1, %2 : tensor<2x3x5x7xf32>, tensor<4x2x3x5x7xf32>
}

// CHECK-LABEL: func.func @mask_kept
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %x {newshape = array<i64: 2, 3, 5, 7>}
// CHECK-NEXT:    relay.add %[[R]], %m :
// CHECK-NEXT:    relay.add %[[R]], %w :

// -----

// A constant mask (a causal one, [1, 1, S, S]) becomes a constant of the
// trailing axes' shape rather than a reshape of one.
func.func @constant_mask(%x: tensor<6x2x2xf32>) -> tensor<2x3x2x2xf32> {
  %m = relay.constant dense<[[[[0.0, -1.0e+04], [0.0, 0.0]]]]> : tensor<1x1x2x2xf32>
  %0 = relay.reshape %x {newshape = array<i64: 2, 3, 2, 2>} : (tensor<6x2x2xf32>) -> tensor<2x3x2x2xf32>
  %1 = relay.add %0, %m : (tensor<2x3x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<2x3x2x2xf32>
  func.return %1 : tensor<2x3x2x2xf32>
}

// CHECK-LABEL: func.func @constant_mask(%x: tensor<6x2x2xf32>) -> tensor<2x3x2x2xf32> {
// CHECK-NEXT:    %[[M:.*]] = relay.constant dense<{{\[\[}}0.000000e+00, -1.000000e+04], [0.000000e+00, 0.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %[[A:.*]] = relay.add %x, %[[M]] : (tensor<6x2x2xf32>, tensor<2x2xf32>) -> tensor<6x2x2xf32>
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %[[A]] {newshape = array<i64: 2, 3, 2, 2>}
// CHECK-NEXT:    func.return %[[R]]
