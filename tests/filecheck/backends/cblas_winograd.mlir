// RUN: byoc-opt %s --annotate=cblas,ccompiler | filecheck %s

// A 3x3 conv of stride and dilation 1 with at least 8 input channels a group
// is packed for Winograd: from 14x14 outputs on for F(4x4, 3x3),
// "winograd4x4_8o", G g G^T of each kernel, 6x6, in blocks of 8 output
// channels ([ceil(O/8), I, 6, 6, 8]); on smaller outputs for F(2x2, 3x3),
// "winograd8o", 4x4 each ([ceil(O/8), I, 4, 4, 8]). Strided, dilated or
// 3-channel 3x3 convs keep the direct layouts.

// CHECK-LABEL: func.func @main(
// CHECK:         %[[W1:.*]] = relay.constant {{.*}} : tensor<2x12x6x6x8xf32>
// CHECK-NEXT:    relay.nn.conv2d_packed %x, %[[W1]] {extern.target = "cblas", extern.composite = "cblas.conv2d_bias_relu", padding = array<i64: 1, 1>, channels = 10 : i64, kernel_layout = "winograd4x4_8o"} : (tensor<1x12x20x20xf32>, tensor<2x12x6x6x8xf32>) -> tensor<1x10x20x20xf32>
// CHECK:         relay.nn.conv2d_packed {{.*}} {extern.target = "cblas", strides = array<i64: 2, 2>, channels = 10 : i64, kernel_layout = "OIHW32o"}
// CHECK:         %[[W3:.*]] = relay.constant {{.*}} : tensor<1x10x4x4x8xf32>
// CHECK-NEXT:    relay.nn.conv2d_packed %{{.*}}, %[[W3]] {extern.target = "cblas", padding = array<i64: 1, 1>, channels = 4 : i64, kernel_layout = "winograd8o"} : (tensor<1x10x9x9xf32>, tensor<1x10x4x4x8xf32>) -> tensor<1x4x9x9xf32>
// CHECK:         relay.nn.conv2d_packed {{.*}} dilation = array<i64: 2, 2>, channels = 4 : i64, kernel_layout = "{{OIHW8o|OIHW32o}}"}
// CHECK:         relay.nn.conv2d_packed {{.*}} {extern.target = "cblas", channels = 8 : i64, kernel_layout = "{{OIHW8o|OIHW32o}}"}

func.func @main(%x: tensor<1x12x20x20xf32>, %y: tensor<1x3x20x20xf32>) -> (tensor<1x4x9x9xf32>, tensor<1x4x6x6xf32>, tensor<1x8x18x18xf32>) {
  %w = relay.constant dense<0.25> : tensor<10x12x3x3xf32>
  %b = relay.constant dense<0.5> : tensor<10xf32>
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<1x12x20x20xf32>, tensor<10x12x3x3xf32>) -> tensor<1x10x20x20xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x10x20x20xf32>, tensor<10xf32>) -> tensor<1x10x20x20xf32>
  %2 = relay.nn.relu %1 : (tensor<1x10x20x20xf32>) -> tensor<1x10x20x20xf32>
  %w2 = relay.constant dense<0.125> : tensor<10x10x3x3xf32>
  %3 = relay.nn.conv2d %2, %w2 {strides = array<i64: 2, 2>} : (tensor<1x10x20x20xf32>, tensor<10x10x3x3xf32>) -> tensor<1x10x9x9xf32>
  %w5 = relay.constant dense<0.25> : tensor<4x10x3x3xf32>
  %7 = relay.nn.conv2d %3, %w5 {padding = array<i64: 1, 1>} : (tensor<1x10x9x9xf32>, tensor<4x10x3x3xf32>) -> tensor<1x4x9x9xf32>
  %w3 = relay.constant dense<0.125> : tensor<4x10x3x3xf32>
  %4 = relay.nn.conv2d %3, %w3 {dilation = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x10x9x9xf32>, tensor<4x10x3x3xf32>) -> tensor<1x4x7x7xf32>
  %5 = relay.nn.max_pool2d %4 {pool_size = array<i64: 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x4x7x7xf32>) -> tensor<1x4x6x6xf32>
  %w4 = relay.constant dense<0.5> : tensor<8x3x3x3xf32>
  %6 = relay.nn.conv2d %y, %w4 : (tensor<1x3x20x20xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x18x18xf32>
  func.return %7, %5, %6 : tensor<1x4x9x9xf32>, tensor<1x4x6x6xf32>, tensor<1x8x18x18xf32>
}
