// RUN: byoc-opt %s | filecheck %s
// RUN: byoc-opt %s --print-op-generic | byoc-opt | filecheck %s

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %0 = extern.region "ccompiler"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
// CHECK-NEXT:      %1 = relay.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:      extern.yield %1 : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %1 = extern.call @ccompiler_0(%0) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %1 : tensor<4xf32>
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = extern.region "ccompiler"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %1 = relay.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    extern.yield %1 : tensor<4xf32>
  }
  %1 = extern.call @ccompiler_0(%0) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func private @ccompiler_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {extern.compiler = "ccompiler"} {
  func.return %x : tensor<4xf32>
}
