// RUN: byoc-opt %s --annotate=cblas,ccompiler | filecheck %s
// RUN: byoc-opt %s --annotate=cblas,ccompiler --partition | filecheck %s --check-prefix=PART

// cblas packs the constant weight of each conv2d it takes into the layout
// libbyoc's kernel reads (Backend.alter_op, right after annotation): a new
// constant [G * ceil(O/G / b), I, KH, KW, b] and relay.nn.conv2d_packed. A
// padded conv whose 12 channels fill a block of 16 as well as two of 8, and a
// strided one, get blocks of 32 (vectors of channels; test_libbyoc.py checks
// the choice of blocks of 8, vectors of pixels, by shape). The bias, the residual add and the relu
// stay in the composite; a conv2d whose weight is an argument is not packed.

// CHECK-LABEL: func.func @main(
// CHECK:         %[[W1:.*]] = relay.constant {{.*}} : tensor<1x4x3x3x32xf32>
// CHECK-NEXT:    %[[C1:.*]] = relay.nn.conv2d_packed %x, %[[W1]] {extern.target = "cblas", extern.composite = "cblas.conv2d_bias_add_relu", padding = array<i64: 1, 1>, channels = 12 : i64, kernel_layout = "OIHW32o"} : (tensor<1x4x40x40xf32>, tensor<1x4x3x3x32xf32>) -> tensor<1x12x40x40xf32>
// CHECK-NEXT:    relay.nn.bias_add %[[C1]], {{.*}} {extern.target = "cblas", extern.composite = "cblas.conv2d_bias_add_relu"}
// CHECK-NEXT:    relay.add {{.*}} {extern.target = "cblas", extern.composite = "cblas.conv2d_bias_add_relu"}
// CHECK-NEXT:    relay.nn.relu {{.*}} {extern.target = "cblas", extern.composite = "cblas.conv2d_bias_add_relu"}
// CHECK:         %[[W2:.*]] = relay.constant {{.*}} : tensor<1x12x1x1x32xf32>
// CHECK-NEXT:    relay.nn.conv2d_packed {{.*}}, %[[W2]] {extern.target = "cblas", strides = array<i64: 2, 2>, channels = 6 : i64, kernel_layout = "OIHW32o"} : (tensor<1x12x40x40xf32>, tensor<1x12x1x1x32xf32>) -> tensor<1x6x20x20xf32>
// CHECK-NEXT:    relay.nn.conv2d {{.*}}, %k {extern.target = "cblas"}
// CHECK-NOT:     relay.constant {{.*}} : tensor<12x4x3x3xf32>

// PART:         func.func private @cblas_0(
// PART:           relay.nn.conv2d_packed
// PART-NEXT:      relay.nn.bias_add
// PART-NEXT:      relay.add
// PART-NEXT:      relay.nn.relu
// PART-NEXT:      relay.nn.conv2d_packed
// PART-NEXT:      relay.nn.conv2d

func.func @main(%x: tensor<1x4x40x40xf32>, %r: tensor<1x12x40x40xf32>, %k: tensor<3x6x3x3xf32>) -> tensor<1x3x18x18xf32> {
  %w = relay.constant dense<0.25> : tensor<12x4x3x3xf32>
  %b = relay.constant dense<0.5> : tensor<12xf32>
  %w2 = relay.constant dense<0.125> : tensor<6x12x1x1xf32>
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<1x4x40x40xf32>, tensor<12x4x3x3xf32>) -> tensor<1x12x40x40xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x12x40x40xf32>, tensor<12xf32>) -> tensor<1x12x40x40xf32>
  %2 = relay.add %1, %r : (tensor<1x12x40x40xf32>, tensor<1x12x40x40xf32>) -> tensor<1x12x40x40xf32>
  %3 = relay.nn.relu %2 : (tensor<1x12x40x40xf32>) -> tensor<1x12x40x40xf32>
  %4 = relay.nn.conv2d %3, %w2 {strides = array<i64: 2, 2>} : (tensor<1x12x40x40xf32>, tensor<6x12x1x1xf32>) -> tensor<1x6x20x20xf32>
  %5 = relay.nn.conv2d %4, %k : (tensor<1x6x20x20xf32>, tensor<3x6x3x3xf32>) -> tensor<1x3x18x18xf32>
  func.return %5 : tensor<1x3x18x18xf32>
}
