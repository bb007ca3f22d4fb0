// RUN: byoc-opt %s --annotate=cblas,ccompiler | filecheck %s

// A residual add whose first operand is the other branch (`add(r, conv)`,
// ResNet's projection blocks: the shortcut conv comes after the main branch)
// is in the composite of the conv defined last: cblas declares `relay.add`
// commutative, so the match swaps its operands and the chain value comes
// first. The add of two values from before the chain stays out of it.

// CHECK-LABEL: func.func @main(
// CHECK:         %[[MAIN:.*]] = relay.nn.conv2d_packed %x, {{.*}}extern.composite = "cblas.conv2d_bias"
// CHECK:         %[[BM:.*]] = relay.nn.bias_add %[[MAIN]], {{.*}}extern.composite = "cblas.conv2d_bias"
// CHECK:         %[[SHORT:.*]] = relay.nn.conv2d_packed %x, {{.*}}extern.composite = "cblas.conv2d_bias_add_relu"
// CHECK-NEXT:    %[[BS:.*]] = relay.nn.bias_add %[[SHORT]], {{.*}}extern.composite = "cblas.conv2d_bias_add_relu"
// CHECK-NEXT:    %[[SUM:.*]] = relay.add %[[BS]], %[[BM]] {{{.*}}extern.composite = "cblas.conv2d_bias_add_relu"}
// CHECK-NEXT:    relay.nn.relu %[[SUM]] {{{.*}}extern.composite = "cblas.conv2d_bias_add_relu"}
// CHECK-NEXT:    relay.add %x, %r {extern.target = "ccompiler"}

func.func @main(%x: tensor<1x4x6x6xf32>, %r: tensor<1x4x6x6xf32>) -> (tensor<1x8x6x6xf32>, tensor<1x4x6x6xf32>) {
  %w = relay.constant dense<0.25> : tensor<8x4x1x1xf32>
  %v = relay.constant dense<0.5> : tensor<8x4x1x1xf32>
  %b = relay.constant dense<0.125> : tensor<8xf32>
  %0 = relay.nn.conv2d %x, %w : (tensor<1x4x6x6xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x6x6xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x8x6x6xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
  %2 = relay.nn.conv2d %x, %v : (tensor<1x4x6x6xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x6x6xf32>
  %3 = relay.nn.bias_add %2, %b : (tensor<1x8x6x6xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
  %4 = relay.add %1, %3 : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %5 = relay.nn.relu %4 : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %6 = relay.add %x, %r : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  func.return %5, %6 : tensor<1x8x6x6xf32>, tensor<1x4x6x6xf32>
}
