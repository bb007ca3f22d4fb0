// RUN: byoc-opt %s | filecheck %s
// RUN: byoc-opt %s --print-op-generic | byoc-opt | filecheck %s
// RUN: byoc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @elementwise(
// CHECK-NEXT:    %0 = relay.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = relay.subtract %0, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = relay.multiply %1, %c : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = relay.divide %2, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = relay.nn.relu %3 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %5 = relay.tanh %4 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %6 = relay.exp %5 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %7 = relay.negative %6 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %7 : tensor<2x3xf32>

// GENERIC: "relay.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// GENERIC: "relay.nn.relu"(%{{.*}}) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  %0 = relay.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = relay.subtract %0, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = relay.multiply %1, %c : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %3 = relay.divide %2, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %4 = relay.nn.relu %3 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = relay.tanh %4 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = relay.exp %5 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = relay.negative %6 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %7 : tensor<2x3xf32>
}

// The generic form parses too.
// CHECK-LABEL: func.func @generic(
// CHECK-NEXT:    %0 = relay.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @generic(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "relay.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
