// RUN: byoc-opt %s -p byoc-dedup-functions | filecheck %s

// Identical private functions become one (the first): @cc_1 is @cc_0 with
// other SSA names, so its caller calls @cc_0. @cc_2 reads another constant
// and @cc_3 another argument order: they stay. Public functions never merge.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[A:.*]] = extern.call @cc_0(%x, %y)
// CHECK-NEXT:    %[[B:.*]] = extern.call @cc_0(%[[A]], %y)
// CHECK-NEXT:    %[[C:.*]] = extern.call @cc_2(%[[B]], %y)
// CHECK-NEXT:    %[[D:.*]] = extern.call @cc_3(%[[C]], %y)
// CHECK-NEXT:    func.return %[[D]]
// CHECK:       func.func private @cc_0(
// CHECK-NOT:   func.func private @cc_1(
// CHECK:       func.func private @cc_2(
// CHECK:       func.func private @cc_3(
// CHECK:       func.func @public_0(
// CHECK:       func.func @public_1(
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = extern.call @cc_0(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = extern.call @cc_1(%0, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = extern.call @cc_2(%1, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = extern.call @cc_3(%2, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}
func.func private @cc_0(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> attributes {extern.compiler = "ccompiler"} {
  %w = relay.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.multiply %0, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func private @cc_1(%p: tensor<4xf32>, %q: tensor<4xf32>) -> tensor<4xf32> attributes {extern.compiler = "ccompiler"} {
  %v = relay.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s = relay.add %p, %q : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = relay.multiply %s, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %t : tensor<4xf32>
}
func.func private @cc_2(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> attributes {extern.compiler = "ccompiler"} {
  %w = relay.constant dense<[1.0, 2.0, 3.0, 5.0]> : tensor<4xf32>
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.multiply %0, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func private @cc_3(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> attributes {extern.compiler = "ccompiler"} {
  %w = relay.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = relay.add %b, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.multiply %0, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func @public_0(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @public_1(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
