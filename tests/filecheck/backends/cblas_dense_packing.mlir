// RUN: byoc-opt %s --annotate=cblas,ccompiler | filecheck %s
// RUN: byoc-opt %s --annotate=cblas,ccompiler --partition | filecheck %s --check-prefix=PART

// cblas packs the constant weight [N, K] of each dense it takes into the
// panels libbyoc's kernel reads (Backend.alter_op): a new constant
// [ceil(N/32), K, 32] and relay.nn.dense_packed. A bias along the last axis
// with gelu (a transformer's feed-forward) or with a residual add stays in
// the composite, computed in the pass that writes the output; a dense whose
// weight is an argument is not packed, and gelu's tanh form is not fused.

// CHECK-LABEL: func.func @main(
// CHECK:         %[[W1:.*]] = relay.constant {{.*}} : tensor<2x16x32xf32>
// CHECK-NEXT:    %[[D1:.*]] = relay.nn.dense_packed %x, %[[W1]] {extern.target = "cblas", extern.composite = "cblas.dense_bias_gelu", units = 40 : i64} : (tensor<3x16xf32>, tensor<2x16x32xf32>) -> tensor<3x40xf32>
// CHECK-NEXT:    relay.nn.bias_add %[[D1]], {{.*}} {extern.target = "cblas", extern.composite = "cblas.dense_bias_gelu"
// CHECK-NEXT:    relay.nn.gelu {{.*}} {extern.target = "cblas", extern.composite = "cblas.dense_bias_gelu"}
// CHECK:         %[[W2:.*]] = relay.constant {{.*}} : tensor<1x40x32xf32>
// CHECK-NEXT:    relay.nn.dense_packed {{.*}}, %[[W2]] {extern.target = "cblas", extern.composite = "cblas.dense_bias_add", units = 16 : i64} : (tensor<3x40xf32>, tensor<1x40x32xf32>) -> tensor<3x16xf32>
// CHECK-NEXT:    relay.nn.bias_add {{.*}} {extern.target = "cblas", extern.composite = "cblas.dense_bias_add"
// CHECK-NEXT:    relay.add {{.*}} {extern.target = "cblas", extern.composite = "cblas.dense_bias_add"}
// CHECK:         relay.nn.dense {{.*}}, %k {extern.target = "cblas"}
// CHECK-NEXT:    relay.nn.gelu {{.*}} {approximate = "tanh"} : (tensor<3x8xf32>) -> tensor<3x8xf32>
// CHECK-NOT:     relay.constant {{.*}} : tensor<40x16xf32>

// PART:         func.func private @cblas_0(
// PART:           relay.nn.dense_packed
// PART-NEXT:      relay.nn.bias_add
// PART-NEXT:      relay.nn.gelu
// PART-NEXT:      relay.nn.dense_packed
// PART-NEXT:      relay.nn.bias_add
// PART-NEXT:      relay.add
// PART-NEXT:      relay.nn.dense

func.func @main(%x: tensor<3x16xf32>, %k: tensor<8x16xf32>) -> tensor<3x8xf32> {
  %w = relay.constant dense<0.25> : tensor<40x16xf32>
  %b = relay.constant dense<0.5> : tensor<40xf32>
  %w2 = relay.constant dense<0.125> : tensor<16x40xf32>
  %b2 = relay.constant dense<-0.5> : tensor<16xf32>
  %0 = relay.nn.dense %x, %w : (tensor<3x16xf32>, tensor<40x16xf32>) -> tensor<3x40xf32>
  %1 = relay.nn.bias_add %0, %b {axis = 1 : i64} : (tensor<3x40xf32>, tensor<40xf32>) -> tensor<3x40xf32>
  %2 = relay.nn.gelu %1 : (tensor<3x40xf32>) -> tensor<3x40xf32>
  %3 = relay.nn.dense %2, %w2 : (tensor<3x40xf32>, tensor<16x40xf32>) -> tensor<3x16xf32>
  %4 = relay.nn.bias_add %3, %b2 {axis = 1 : i64} : (tensor<3x16xf32>, tensor<16xf32>) -> tensor<3x16xf32>
  %5 = relay.add %4, %x : (tensor<3x16xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
  %6 = relay.nn.dense %5, %k : (tensor<3x16xf32>, tensor<8x16xf32>) -> tensor<3x8xf32>
  %7 = relay.nn.gelu %6 {approximate = "tanh"} : (tensor<3x8xf32>) -> tensor<3x8xf32>
  func.return %7 : tensor<3x8xf32>
}
