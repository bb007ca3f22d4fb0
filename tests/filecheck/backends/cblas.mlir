// RUN: byoc-opt %s --annotate=cblas,ccompiler --partition | filecheck %s
// RUN: byoc-opt %s --annotate=cblas,ccompiler --partition -t report | filecheck %s --check-prefix=REPORT
// RUN: byoc-translate %s --emit-c --annotate=cblas,ccompiler | filecheck %s --check-prefix=CSRC

// cblas first: dense and conv2d (with their bias/relu epilogues as composites)
// go to cblas, the depthwise conv2d too (libbyoc's depthwise kernel); the
// elementwise add to ccompiler; tanh stays on the host.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[H:.*]], %[[C:.*]] = extern.call @cblas_0(%x, %w1, %b1, %img, %k, %kb, %dw)
// CHECK-NEXT:    %[[S:.*]] = extern.call @ccompiler_0(%[[H]], %r)
// CHECK-NEXT:    %[[Y:.*]] = extern.call @cblas_1(%[[S]], %w2)
// CHECK-NEXT:    %[[T:.*]] = relay.tanh %[[Y]]
// CHECK-NEXT:    func.return %[[T]], %[[C]]

// CHECK:       func.func private @cblas_0({{.*}}) -> (tensor<4x32xf32>, tensor<1x16x6x6xf32>) attributes {extern.compiler = "cblas"} {
// CHECK-NEXT:    relay.nn.dense {{.*}}{extern.composite = "cblas.dense_bias_relu"}
// CHECK-NEXT:    relay.nn.bias_add {{.*}}{extern.composite = "cblas.dense_bias_relu"}
// CHECK-NEXT:    relay.nn.relu {{.*}}{extern.composite = "cblas.dense_bias_relu"}
// CHECK-NEXT:    relay.nn.conv2d {{.*}}{extern.composite = "cblas.conv2d_bias_relu", padding = array<i64: 1, 1>}
// CHECK-NEXT:    relay.nn.bias_add {{.*}}{extern.composite = "cblas.conv2d_bias_relu"}
// CHECK-NEXT:    relay.nn.relu {{.*}}{extern.composite = "cblas.conv2d_bias_relu"}
// CHECK-NEXT:    relay.nn.conv2d {{.*}}{extern.composite = "cblas.conv2d_relu", padding = array<i64: 1, 1>, groups = 16 : i64}
// CHECK-NEXT:    relay.nn.relu {{.*}}{extern.composite = "cblas.conv2d_relu"}
// CHECK-NEXT:    func.return

// CHECK:       func.func private @ccompiler_0({{.*}}) -> tensor<4x32xf32> attributes {extern.compiler = "ccompiler"} {
// CHECK-NEXT:    relay.add
// CHECK-NEXT:    func.return

// CHECK:       func.func private @cblas_1({{.*}}) -> tensor<4x8xf32> attributes {extern.compiler = "cblas"} {
// CHECK-NEXT:    relay.nn.dense
// CHECK-NOT:     extern.composite
// CHECK-NEXT:    func.return

// REPORT:      # byoc partition report
// REPORT-NEXT: backend cblas: 2 function(s), 9 op(s)
// REPORT-NEXT:   @cblas_0: 8 op(s)
// REPORT-NEXT:     relay.nn.dense  {{.*}}cblas.mlir:{{[0-9]+}}:3  [cblas.dense_bias_relu]
// REPORT-NEXT:     relay.nn.bias_add  {{.*}}  [cblas.dense_bias_relu]
// REPORT-NEXT:     relay.nn.relu  {{.*}}  [cblas.dense_bias_relu]
// REPORT-NEXT:     relay.nn.conv2d  {{.*}}  [cblas.conv2d_bias_relu]
// REPORT-NEXT:     relay.nn.bias_add  {{.*}}  [cblas.conv2d_bias_relu]
// REPORT-NEXT:     relay.nn.relu  {{.*}}  [cblas.conv2d_bias_relu]
// REPORT-NEXT:     relay.nn.conv2d  {{.*}}  [cblas.conv2d_relu]
// REPORT-NEXT:     relay.nn.relu  {{.*}}  [cblas.conv2d_relu]
// REPORT-NEXT:   @cblas_1: 1 op(s)
// REPORT-NEXT:     relay.nn.dense  {{.*}}cblas.mlir:{{[0-9]+}}:3{{$}}
// REPORT-NEXT: backend ccompiler: 1 function(s), 1 op(s)
// REPORT-NEXT:   @ccompiler_0: 1 op(s)
// REPORT-NEXT:     relay.add
// REPORT-NEXT: host: 1 op(s)
// REPORT-NEXT:   relay.tanh  {{.*}}  unsupported: cblas does not support relay.tanh; ccompiler does not support relay.tanh

// The C: one sgemm per product (dense weight [N, K] read transposed), the
// bias + relu in one loop over the product, in place; im2col for the 3x3 conv.
// CSRC:     // backend: cblas
// CSRC:     #include <cblas.h>
// CSRC:     int32_t cblas_0(const float* restrict [[X:v[0-9]+]], {{.*}}, float* restrict [[OUT0:v[0-9]+]], float* restrict [[OUT1:v[0-9]+]]) {
// CSRC:       aligned_alloc(64,
// CSRC:       if ({{.*}} == NULL) { cblas_0_failed_bytes = {{[0-9]+}}; return 2; }
// CSRC:       scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 4, 32, 16, 1.0f, [[X]], 16, {{.*}}, 16, 0.0f, [[OUT0]], 32);
// CSRC-NEXT:    for (
// CSRC:       ? 0.0f :
// CSRC:       scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 16, 36, 72, 1.0f, {{.*}}, 72, {{.*}}, 36, 0.0f, [[CONV:.*]], 36);
// CSRC:       byoc_rt_depthwise_conv2d((&cblas_0_conv_{{[0-9]+}}), [[CONV]], {{.*}}, NULL, NULL, [[OUT1]]);
// CSRC-NEXT:    if ([[S:v[0-9]+]]) { free({{.*}}); return [[S]]; }
// CSRC-NEXT:    free(
// CSRC-NEXT:    return 0;
// CSRC:     int32_t cblas_1(
// CSRC:       scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 4, 8, 32,
// CSRC-NOT:     for (
// CSRC:       return 0;
// CSRC:     // backend: ccompiler

func.func @main(%x: tensor<4x16xf32>, %w1: tensor<32x16xf32>, %b1: tensor<32xf32>, %r: tensor<4x32xf32>, %w2: tensor<8x32xf32>, %img: tensor<1x8x6x6xf32>, %k: tensor<16x8x3x3xf32>, %kb: tensor<16xf32>, %dw: tensor<16x1x3x3xf32>) -> (tensor<4x8xf32>, tensor<1x16x6x6xf32>) {
  %0 = relay.nn.dense %x, %w1 : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %1 = relay.nn.bias_add %0, %b1 {axis = 1 : i64} : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %2 = relay.nn.relu %1 : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %3 = relay.add %2, %r : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %4 = relay.nn.dense %3, %w2 : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
  %5 = relay.tanh %4 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = relay.nn.conv2d %img, %k {padding = array<i64: 1, 1>} : (tensor<1x8x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x6x6xf32>
  %7 = relay.nn.bias_add %6, %kb : (tensor<1x16x6x6xf32>, tensor<16xf32>) -> tensor<1x16x6x6xf32>
  %8 = relay.nn.relu %7 : (tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %9 = relay.nn.conv2d %8, %dw {groups = 16 : i64, padding = array<i64: 1, 1>} : (tensor<1x16x6x6xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x6x6xf32>
  %10 = relay.nn.relu %9 : (tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  func.return %5, %10 : tensor<4x8xf32>, tensor<1x16x6x6xf32>
}
