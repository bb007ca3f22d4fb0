// RUN: byoc-opt %s -p byoc-fold-transposes --split-input-file | filecheck %s

// Transposes of the last two axes become batch_matmul's flags (the
// default transpose_b = true is not printed).
func.func @batch_matmul(%x: tensor<2x5x3xf32>, %y: tensor<2x4x5xf32>) -> tensor<2x3x4xf32> {
  %0 = relay.transpose %x {axes = array<i64: 0, 2, 1>} : (tensor<2x5x3xf32>) -> tensor<2x3x5xf32>
  %1 = relay.transpose %y {axes = array<i64: 0, 2, 1>} : (tensor<2x4x5xf32>) -> tensor<2x5x4xf32>
  %2 = relay.nn.batch_matmul %0, %1 {transpose_b = false} : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  func.return %2 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @batch_matmul(%x: tensor<2x5x3xf32>, %y: tensor<2x4x5xf32>) -> tensor<2x3x4xf32> {
// CHECK-NEXT:    %[[R:.*]] = relay.nn.batch_matmul %x, %y {transpose_a = true} : (tensor<2x5x3xf32>, tensor<2x4x5xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %[[R]]

// -----

// matmul's flags; dense of a transposed weight is a matmul.
func.func @matmul(%a: tensor<5x3xf32>, %b: tensor<4x5xf32>, %w: tensor<5x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %0 = relay.transpose %a : (tensor<5x3xf32>) -> tensor<3x5xf32>
  %1 = relay.transpose %b : (tensor<4x5xf32>) -> tensor<5x4xf32>
  %2 = relay.nn.matmul %0, %1 : (tensor<3x5xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
  %3 = relay.transpose %w : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %4 = relay.nn.dense %0, %3 : (tensor<3x5xf32>, tensor<4x5xf32>) -> tensor<3x4xf32>
  func.return %2, %4 : tensor<3x4xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @matmul(%a: tensor<5x3xf32>, %b: tensor<4x5xf32>, %w: tensor<5x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
// CHECK-NEXT:    %[[T:.*]] = relay.transpose %a
// CHECK-NEXT:    %[[M:.*]] = relay.nn.matmul %a, %b {transpose_a = true, transpose_b = true} : (tensor<5x3xf32>, tensor<4x5xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[D:.*]] = relay.nn.matmul %[[T]], %w : (tensor<3x5xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %[[M]], %[[D]]

// -----

// Attention's keys as PyTorch exports them: heads split and transposed by
// one permutation, (0, 2, 3, 1). The swap of the last two axes becomes the
// flag; the head split left, (0, 2, 1, 3), moves whole rows.
func.func @attention_keys(%q: tensor<12x128x64xf32>, %k: tensor<1x128x12x64xf32>) -> tensor<12x128x128xf32> {
  %0 = relay.transpose %k {axes = array<i64: 0, 2, 3, 1>} : (tensor<1x128x12x64xf32>) -> tensor<1x12x64x128xf32>
  %1 = relay.reshape %0 {newshape = array<i64: 12, 64, 128>} : (tensor<1x12x64x128xf32>) -> tensor<12x64x128xf32>
  %2 = relay.nn.batch_matmul %q, %1 {transpose_b = false} : (tensor<12x128x64xf32>, tensor<12x64x128xf32>) -> tensor<12x128x128xf32>
  func.return %2 : tensor<12x128x128xf32>
}

// CHECK-LABEL: func.func @attention_keys
// CHECK-NEXT:    %[[T:.*]] = relay.transpose %k {axes = array<i64: 0, 2, 1, 3>} : (tensor<1x128x12x64xf32>) -> tensor<1x12x128x64xf32>
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %[[T]] {newshape = array<i64: 12, 128, 64>} : (tensor<1x12x128x64xf32>) -> tensor<12x128x64xf32>
// CHECK-NEXT:    %[[S:.*]] = relay.nn.batch_matmul %q, %[[R]] : (tensor<12x128x64xf32>, tensor<12x128x64xf32>) -> tensor<12x128x128xf32>
// CHECK-NEXT:    func.return %[[S]]

// -----

// When the flag leaves no movement at all, the transpose goes; its input's
// reshape is looked through.
func.func @no_copy_left(%q: tensor<6x4x3xf32>, %k: tensor<24x3xf32>) -> tensor<6x4x4xf32> {
  %0 = relay.reshape %k {newshape = array<i64: 2, 3, 4, 3>} : (tensor<24x3xf32>) -> tensor<2x3x4x3xf32>
  %1 = relay.transpose %0 {axes = array<i64: 0, 1, 3, 2>} : (tensor<2x3x4x3xf32>) -> tensor<2x3x3x4xf32>
  %2 = relay.reshape %1 {newshape = array<i64: 6, 3, 4>} : (tensor<2x3x3x4xf32>) -> tensor<6x3x4xf32>
  %3 = relay.nn.batch_matmul %q, %2 {transpose_b = false} : (tensor<6x4x3xf32>, tensor<6x3x4xf32>) -> tensor<6x4x4xf32>
  func.return %3 : tensor<6x4x4xf32>
}

// CHECK-LABEL: func.func @no_copy_left
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %k {newshape = array<i64: 6, 4, 3>} : (tensor<24x3xf32>) -> tensor<6x4x3xf32>
// CHECK-NEXT:    %[[S:.*]] = relay.nn.batch_matmul %q, %[[R]] : (tensor<6x4x3xf32>, tensor<6x4x3xf32>) -> tensor<6x4x4xf32>
// CHECK-NEXT:    func.return %[[S]]

// -----

// A transpose with another user stays for that user while the product
// reads its input in place. Kept: a transpose behind a reshape whose
// innermost axis would still move (nothing gained).
func.func @kept(%x: tensor<2x5x3xf32>, %y: tensor<2x5x4xf32>, %k: tensor<4x5x2xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x5xf32>, tensor<2x3x4xf32>) {
  %0 = relay.transpose %x {axes = array<i64: 0, 2, 1>} : (tensor<2x5x3xf32>) -> tensor<2x3x5xf32>
  %1 = relay.nn.batch_matmul %0, %y {transpose_b = false} : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  %2 = relay.transpose %k {axes = array<i64: 2, 1, 0>} : (tensor<4x5x2xf32>) -> tensor<2x5x4xf32>
  %3 = relay.reshape %2 {newshape = array<i64: 2, 5, 4>} : (tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  %4 = relay.nn.batch_matmul %0, %3 {transpose_b = false} : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  func.return %1, %0, %4 : tensor<2x3x4xf32>, tensor<2x3x5xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK-NEXT:    %[[T:.*]] = relay.transpose %x
// CHECK-NEXT:    %[[M:.*]] = relay.nn.batch_matmul %x, %y {transpose_a = true, transpose_b = false}
// CHECK-NEXT:    %[[K:.*]] = relay.transpose %k {axes = array<i64: 2, 1, 0>}
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %[[K]]
// CHECK-NEXT:    %[[N:.*]] = relay.nn.batch_matmul %x, %[[R]] {transpose_a = true, transpose_b = false}
// CHECK-NEXT:    func.return %[[M]], %[[T]], %[[N]]
