// RUN: byoc-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = extern.region "ccompiler"(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<3xf32>):
    extern.yield %x : tensor<3xf32>
  }
  func.return %0 : tensor<4xf32>
}
// CHECK: extern_invalid.mlir:4:3: error: 'extern.region': block argument types (tensor<3xf32>) do not match operand types (tensor<4xf32>)

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = extern.region "ccompiler"(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %1 = relay.add %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    extern.yield %1 : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}
// CHECK: extern_invalid.mlir:15:3: error: 'extern.region': Operation using value defined out of its IsolatedFromAbove parent
