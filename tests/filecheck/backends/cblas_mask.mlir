// RUN: byoc-opt %s --annotate=cblas,ccompiler --partition --split-input-file | filecheck %s

// Attention with an additive mask [1, 1, 1, S] as byoc-simplify leaves it:
// the mask reshaped to the scores' rank (first in the block), added to the
// batch matmul's scores before their softmax. cblas takes the scores, the
// add and the softmax as one composite (the add's operands either way
// round), the mask's reshape as a view it reads in place, and the values'
// product: one cblas function, nothing on ccompiler or the host.

// CHECK-LABEL: func.func @main(%q: tensor<3x5x4xf32>, %k: tensor<3x7x4xf32>, %v: tensor<3x7x6xf32>, %mask: tensor<1x1x1x7xf32>) -> tensor<3x5x6xf32> {
// CHECK-NEXT:    %[[R:.*]] = extern.call @cblas_0(%mask, %q, %k, %v)
// CHECK-NEXT:    func.return %[[R]]
// CHECK:       func.func private @cblas_0(
// CHECK-NEXT:    %[[M:.*]] = relay.reshape %{{.*}} {newshape = array<i64: 1, 1, 7>}
// CHECK-NEXT:    %[[S:.*]] = relay.nn.batch_matmul {{.*}}extern.composite = "cblas.batch_matmul_add_softmax"
// CHECK-NEXT:    %[[A:.*]] = relay.add %[[S]], %[[M]] {{{.*}}extern.composite = "cblas.batch_matmul_add_softmax"}
// CHECK-NEXT:    %[[P:.*]] = relay.nn.softmax %[[A]] {{{.*}}extern.composite = "cblas.batch_matmul_add_softmax"}
// CHECK-NEXT:    relay.nn.batch_matmul %[[P]],
// CHECK-NOT:   ccompiler

func.func @main(%q: tensor<3x5x4xf32>, %k: tensor<3x7x4xf32>, %v: tensor<3x7x6xf32>, %mask: tensor<1x1x1x7xf32>) -> tensor<3x5x6xf32> {
  %m = relay.reshape %mask {newshape = array<i64: 1, 1, 7>} : (tensor<1x1x1x7xf32>) -> tensor<1x1x7xf32>
  %0 = relay.nn.batch_matmul %q, %k : (tensor<3x5x4xf32>, tensor<3x7x4xf32>) -> tensor<3x5x7xf32>
  %1 = relay.add %m, %0 : (tensor<1x1x7xf32>, tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %2 = relay.nn.softmax %1 : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %3 = relay.nn.batch_matmul %2, %v {transpose_b = false} : (tensor<3x5x7xf32>, tensor<3x7x6xf32>) -> tensor<3x5x6xf32>
  func.return %3 : tensor<3x5x6xf32>
}

// -----

// A mask broadcast along the keys (one value per query row) is not one
// byoc_rt_softmax adds: the pattern declines, the add goes to ccompiler, the
// softmax to the host, and the scores and the values' product to two cblas
// functions.

// CHECK-LABEL: func.func @main(%q: tensor<3x5x4xf32>, %k: tensor<3x7x4xf32>, %v: tensor<3x7x6xf32>, %mask: tensor<5x1xf32>) -> tensor<3x5x6xf32> {
// CHECK-NEXT:    %[[S:.*]] = extern.call @cblas_0(%q, %k)
// CHECK-NEXT:    %[[A:.*]] = extern.call @ccompiler_0(%[[S]], %mask)
// CHECK-NEXT:    %[[P:.*]] = relay.nn.softmax %[[A]]
// CHECK-NEXT:    extern.call @cblas_1(%[[P]], %v)

func.func @main(%q: tensor<3x5x4xf32>, %k: tensor<3x7x4xf32>, %v: tensor<3x7x6xf32>, %mask: tensor<5x1xf32>) -> tensor<3x5x6xf32> {
  %0 = relay.nn.batch_matmul %q, %k : (tensor<3x5x4xf32>, tensor<3x7x4xf32>) -> tensor<3x5x7xf32>
  %1 = relay.add %0, %mask : (tensor<3x5x7xf32>, tensor<5x1xf32>) -> tensor<3x5x7xf32>
  %2 = relay.nn.softmax %1 : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %3 = relay.nn.batch_matmul %2, %v {transpose_b = false} : (tensor<3x5x7xf32>, tensor<3x7x6xf32>) -> tensor<3x5x6xf32>
  func.return %3 : tensor<3x5x6xf32>
}

// -----

// A mask row per batch ([B, 1, 1, S], B = 2 batches of 3 heads) stays on the
// 4-d scores (byoc-simplify cannot move it onto [B*H, R, S]): the scores'
// reshape joins the composite (batch_matmul_heads_add_softmax), written in
// place, and the reshape back is the values' product's view: one function.

// CHECK-LABEL: func.func @main(%q: tensor<6x5x4xf32>, %k: tensor<6x7x4xf32>, %v: tensor<6x7x6xf32>, %mask: tensor<2x1x1x7xf32>) -> tensor<6x5x6xf32> {
// CHECK-NEXT:    %[[R:.*]] = extern.call @cblas_0(%q, %k, %mask, %v)
// CHECK-NEXT:    func.return %[[R]]
// CHECK:       func.func private @cblas_0(
// CHECK-NEXT:    %[[S:.*]] = relay.nn.batch_matmul {{.*}}extern.composite = "cblas.batch_matmul_heads_add_softmax"
// CHECK-NEXT:    %[[H:.*]] = relay.reshape %[[S]] {{{.*}}extern.composite = "cblas.batch_matmul_heads_add_softmax"
// CHECK-NEXT:    %[[A:.*]] = relay.add %[[H]], %{{.*}} {{{.*}}extern.composite = "cblas.batch_matmul_heads_add_softmax"}
// CHECK-NEXT:    %[[P:.*]] = relay.nn.softmax %[[A]] {{{.*}}extern.composite = "cblas.batch_matmul_heads_add_softmax", axis = 3
// CHECK-NEXT:    %[[F:.*]] = relay.reshape %[[P]] {newshape = array<i64: 6, 5, 7>}
// CHECK-NEXT:    relay.nn.batch_matmul %[[F]],
// CHECK-NOT:   ccompiler

func.func @main(%q: tensor<6x5x4xf32>, %k: tensor<6x7x4xf32>, %v: tensor<6x7x6xf32>, %mask: tensor<2x1x1x7xf32>) -> tensor<6x5x6xf32> {
  %0 = relay.nn.batch_matmul %q, %k : (tensor<6x5x4xf32>, tensor<6x7x4xf32>) -> tensor<6x5x7xf32>
  %1 = relay.reshape %0 {newshape = array<i64: 2, 3, 5, 7>} : (tensor<6x5x7xf32>) -> tensor<2x3x5x7xf32>
  %2 = relay.add %1, %mask : (tensor<2x3x5x7xf32>, tensor<2x1x1x7xf32>) -> tensor<2x3x5x7xf32>
  %3 = relay.nn.softmax %2 {axis = 3 : i64} : (tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %4 = relay.reshape %3 {newshape = array<i64: 6, 5, 7>} : (tensor<2x3x5x7xf32>) -> tensor<6x5x7xf32>
  %5 = relay.nn.batch_matmul %4, %v {transpose_b = false} : (tensor<6x5x7xf32>, tensor<6x7x6xf32>) -> tensor<6x5x6xf32>
  func.return %5 : tensor<6x5x6xf32>
}
