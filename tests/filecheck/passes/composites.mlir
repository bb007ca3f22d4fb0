// RUN: byoc-opt %s --annotate=ccompiler --partition | filecheck %s

// conv2d -> bias_add -> relu is one composite even though its bias constant
// is defined between the conv and the bias_add (a constant cannot depend on
// the chain); dense -> bias_add -> relu is another; the last conv feeds two
// users, so it starts no chain.
// CHECK-LABEL: func.func private @ccompiler_0(
// CHECK-NEXT:    relay.constant
// CHECK-NEXT:    relay.nn.conv2d {{.*}}{extern.composite = "ccompiler.conv2d_bias_relu"
// CHECK-NEXT:    relay.nn.bias_add {{.*}}{extern.composite = "ccompiler.conv2d_bias_relu"}
// CHECK-NEXT:    relay.nn.relu {{.*}}{extern.composite = "ccompiler.conv2d_bias_relu"}
// CHECK-NEXT:    relay.nn.dense {{.*}}{extern.composite = "ccompiler.dense_bias_relu"}
// CHECK-NEXT:    relay.nn.bias_add {{.*}}{extern.composite = "ccompiler.dense_bias_relu"}
// CHECK-NEXT:    relay.nn.relu {{.*}}{extern.composite = "ccompiler.dense_bias_relu"}
// CHECK-NEXT:    relay.nn.conv2d
// CHECK-NOT:     extern.composite
// CHECK:         func.return
func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %d: tensor<2x6xf32>, %dw: tensor<5x6xf32>, %db: tensor<5xf32>) -> (tensor<1x3x4x4xf32>, tensor<2x5xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) {
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %b = relay.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x3x4x4xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  %2 = relay.nn.relu %1 : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %3 = relay.nn.dense %d, %dw : (tensor<2x6xf32>, tensor<5x6xf32>) -> tensor<2x5xf32>
  %4 = relay.nn.bias_add %3, %db : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %5 = relay.nn.relu %4 : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %6 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %7 = relay.nn.bias_add %6, %b : (tensor<1x3x4x4xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  func.return %2, %5, %7, %6 : tensor<1x3x4x4xf32>, tensor<2x5xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>
}
