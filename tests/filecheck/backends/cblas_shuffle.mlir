// RUN: byoc-opt %s --annotate=cblas,ccompiler --partition | filecheck %s
// RUN: byoc-translate %s --emit-c --annotate=cblas,ccompiler | filecheck %s --check-prefix=CSRC

// A channel shuffle (reshape to [N, g, C/g, H, W], transpose (0, 2, 1, 3, 4),
// reshape back: ShuffleNet's) read only by a depthwise conv2d is one cblas
// composite with the conv and its epilogue: the depthwise kernel reads the
// shuffle's input through the channel permutation (`shuffle` = g in its
// struct), no copy. A transpose that is not a shuffle stays on ccompiler.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[S:.*]] = extern.call @ccompiler_0(%x)
// CHECK-NEXT:    %[[Y:.*]], %[[Z:.*]] = extern.call @cblas_0(%x, %w, %b, %[[S]])

// CHECK:       func.func private @ccompiler_0(
// CHECK-NEXT:    relay.reshape
// CHECK-NEXT:    relay.transpose {{.*}}axes = array<i64: 0, 1, 2, 4, 3>
// CHECK-NEXT:    relay.reshape
// CHECK-NEXT:    func.return

// CHECK:       func.func private @cblas_0(
// CHECK-NEXT:    relay.reshape {{.*}}{extern.composite = "cblas.shuffle_conv2d_bias_relu", newshape = array<i64: 1, 3, 2, 5, 7>}
// CHECK-NEXT:    relay.transpose {{.*}}{extern.composite = "cblas.shuffle_conv2d_bias_relu", axes = array<i64: 0, 2, 1, 3, 4>}
// CHECK-NEXT:    relay.reshape {{.*}}{extern.composite = "cblas.shuffle_conv2d_bias_relu", newshape = array<i64: 1, 6, 5, 7>}
// CHECK-NEXT:    relay.nn.conv2d {{.*}}{extern.composite = "cblas.shuffle_conv2d_bias_relu", padding = array<i64: 1, 1>, groups = 6 : i64}
// CHECK-NEXT:    relay.nn.bias_add {{.*}}{extern.composite = "cblas.shuffle_conv2d_bias_relu"}
// CHECK-NEXT:    relay.nn.relu {{.*}}{extern.composite = "cblas.shuffle_conv2d_bias_relu"}
// CHECK-NEXT:    relay.nn.conv2d {{.*}}{padding = array<i64: 1, 1>, groups = 6 : i64}
// CHECK-NEXT:    func.return

// The shuffled conv reads the function's first argument (x) with shuffle 3;
// the other reads ccompiler's transposed copy as it is.
// CSRC:     static const byoc_rt_conv [[C0:cblas_0_conv_[0-9]+]] = {1, 6, 5, 7, 6, 5, 7, 3, 3, 1, 1, 1, 1, 1, 1, 6, 0, 1, {{.*}}, {{.*}}, 3};
// CSRC:     static const byoc_rt_conv [[C1:cblas_0_conv_[0-9]+]] = {1, 6, 5, 7, 6, 5, 7, 3, 3, 1, 1, 1, 1, 1, 1, 6, 0, 0, {{.*}}, {{.*}}, 0};
// CSRC:     int32_t cblas_0(const float* restrict [[X:v[0-9]+]], const float* restrict [[W:v[0-9]+]], const float* restrict [[B:v[0-9]+]], const float* restrict [[T:v[0-9]+]], float* restrict [[OUT0:v[0-9]+]], float* restrict [[OUT1:v[0-9]+]]) {
// CSRC-NOT:   memcpy
// CSRC:       byoc_rt_depthwise_conv2d((&[[C0]]), [[X]], [[W]], [[B]], NULL, [[OUT0]]);
// CSRC:       byoc_rt_depthwise_conv2d((&[[C1]]), [[T]], [[W]], NULL, NULL, [[OUT1]]);

func.func @main(%x: tensor<1x6x5x7xf32>, %w: tensor<6x1x3x3xf32>, %b: tensor<6xf32>) -> (tensor<1x6x5x7xf32>, tensor<1x6x5x7xf32>) {
  %0 = relay.reshape %x {newshape = array<i64: 1, 3, 2, 5, 7>} : (tensor<1x6x5x7xf32>) -> tensor<1x3x2x5x7xf32>
  %1 = relay.transpose %0 {axes = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x3x2x5x7xf32>) -> tensor<1x2x3x5x7xf32>
  %2 = relay.reshape %1 {newshape = array<i64: 1, 6, 5, 7>} : (tensor<1x2x3x5x7xf32>) -> tensor<1x6x5x7xf32>
  %3 = relay.nn.conv2d %2, %w {padding = array<i64: 1, 1>, groups = 6 : i64} : (tensor<1x6x5x7xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x5x7xf32>
  %4 = relay.nn.bias_add %3, %b : (tensor<1x6x5x7xf32>, tensor<6xf32>) -> tensor<1x6x5x7xf32>
  %5 = relay.nn.relu %4 : (tensor<1x6x5x7xf32>) -> tensor<1x6x5x7xf32>
  %6 = relay.reshape %x {newshape = array<i64: 1, 3, 2, 5, 7>} : (tensor<1x6x5x7xf32>) -> tensor<1x3x2x5x7xf32>
  %7 = relay.transpose %6 {axes = array<i64: 0, 1, 2, 4, 3>} : (tensor<1x3x2x5x7xf32>) -> tensor<1x3x2x7x5xf32>
  %8 = relay.reshape %7 {newshape = array<i64: 1, 6, 5, 7>} : (tensor<1x3x2x7x5xf32>) -> tensor<1x6x5x7xf32>
  %9 = relay.nn.conv2d %8, %w {padding = array<i64: 1, 1>, groups = 6 : i64} : (tensor<1x6x5x7xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x5x7xf32>
  func.return %5, %9 : tensor<1x6x5x7xf32>, tensor<1x6x5x7xf32>
}
