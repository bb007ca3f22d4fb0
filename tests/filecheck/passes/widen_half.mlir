// RUN: byoc-opt %s -p byoc-widen-half --split-input-file | filecheck %s

// A float16 dense sums 64 products: it computes in float32 and rounds once.
func.func @dense(%x: tensor<4x64xf16>, %w: tensor<8x64xf16>) -> tensor<4x8xf16> {
  %y = relay.nn.dense %x, %w : (tensor<4x64xf16>, tensor<8x64xf16>) -> tensor<4x8xf16>
  func.return %y : tensor<4x8xf16>
}

// CHECK-LABEL: func.func @dense(%x: tensor<4x64xf16>, %w: tensor<8x64xf16>) -> tensor<4x8xf16> {
// CHECK-NEXT:    %[[X:.*]] = relay.cast %x {dtype = "float32"} : (tensor<4x64xf16>) -> tensor<4x64xf32>
// CHECK-NEXT:    %[[W:.*]] = relay.cast %w {dtype = "float32"} : (tensor<8x64xf16>) -> tensor<8x64xf32>
// CHECK-NEXT:    %[[D:.*]] = relay.nn.dense %[[X]], %[[W]] : (tensor<4x64xf32>, tensor<8x64xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %y = relay.cast %[[D]] {dtype = "float16"} : (tensor<4x8xf32>) -> tensor<4x8xf16>
// CHECK-NEXT:    func.return %y
// CHECK-NEXT:  }

// -----

// Convolutions, pools, reductions and normalisations likewise, attributes
// kept; elementwise ops (the relu) stay in float16.
func.func @cnn(%x: tensor<1x3x8x8xf16>, %w: tensor<4x3x3x3xf16>) -> tensor<1x4xf16> {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf16>, tensor<4x3x3x3xf16>) -> tensor<1x4x8x8xf16>
  %r = relay.nn.relu %c : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %m = relay.mean %r {axis = array<i64: 2, 3>} : (tensor<1x4x8x8xf16>) -> tensor<1x4xf16>
  %s = relay.nn.softmax %m {axis = 1} : (tensor<1x4xf16>) -> tensor<1x4xf16>
  func.return %s : tensor<1x4xf16>
}

// CHECK-LABEL: func.func @cnn(
// CHECK-NEXT:    %[[X:.*]] = relay.cast %x {dtype = "float32"} : (tensor<1x3x8x8xf16>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT:    %[[W:.*]] = relay.cast %w {dtype = "float32"}
// CHECK-NEXT:    %[[C32:.*]] = relay.nn.conv2d %[[X]], %[[W]] {padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %[[C:.*]] = relay.cast %[[C32]] {dtype = "float16"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf16>
// CHECK-NEXT:    %[[R:.*]] = relay.nn.relu %[[C]] : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
// CHECK-NEXT:    %[[R32:.*]] = relay.cast %[[R]] {dtype = "float32"}
// CHECK-NEXT:    %[[M32:.*]] = relay.mean %[[R32]] {axis = array<i64: 2, 3>} : (tensor<1x4x8x8xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %[[M:.*]] = relay.cast %[[M32]] {dtype = "float16"}
// CHECK-NEXT:    %[[M2:.*]] = relay.cast %[[M]] {dtype = "float32"}
// CHECK-NEXT:    %[[S32:.*]] = relay.nn.softmax %[[M2]] {axis = 1 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %s = relay.cast %[[S32]] {dtype = "float16"} : (tensor<1x4xf32>) -> tensor<1x4xf16>
// CHECK-NEXT:    func.return %s
// CHECK-NEXT:  }

// -----

// float32 and float64 ops are left as they are.
func.func @wide(%x: tensor<2x3xf32>, %y: tensor<2x3xf64>) -> (tensor<2xf32>, tensor<2xf64>) {
  %a = relay.sum %x {axis = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %b = relay.sum %y {axis = array<i64: 1>} : (tensor<2x3xf64>) -> tensor<2xf64>
  func.return %a, %b : tensor<2xf32>, tensor<2xf64>
}

// CHECK-LABEL: func.func @wide(
// CHECK-NEXT:    %a = relay.sum %x {axis = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %b = relay.sum %y {axis = array<i64: 1>} : (tensor<2x3xf64>) -> tensor<2xf64>
// CHECK-NEXT:    func.return %a, %b
