// RUN: byoc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// The module-level verifier (dialects/verify.py): dominance, extern.call
// against its callee, @main's results, buffer sizes.

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %1, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.add %0, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
// CHECK: verify_invalid.mlir:6:3: error: 'relay.add': operand 0 (the result of 'relay.add' at {{.*}}verify_invalid.mlir:7:3) is used before its definition

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %0, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: verify_invalid.mlir:15:3: error: 'relay.add': operand 0 is the op's own result

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %0 : tensor<4xf32>
  ^bb1:
  %0 = relay.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: verify_invalid.mlir:23:3: error: 'func.return': operand 0 (the result of 'relay.tanh' at {{.*}}) is defined where it does not dominate this use

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<8xf32> {
  %0 = extern.call @ccompiler_0(%a) : (tensor<4xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
func.func private @ccompiler_0(%0: tensor<4xf32>) -> tensor<4xf32> attributes {extern.compiler = "ccompiler"} {
  %1 = relay.add %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
// CHECK: verify_invalid.mlir:33:3: error: 'extern.call': result types (tensor<8xf32>) do not match the results of @ccompiler_0 (tensor<4xf32>)

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = extern.call @ccompiler_0(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func private @ccompiler_0(%0: tensor<4xf32>) -> tensor<4xf32> attributes {extern.compiler = "ccompiler"} {
  func.return %0 : tensor<4xf32>
}
// CHECK: verify_invalid.mlir:45:3: error: 'extern.call': operand types (tensor<4xf32>, tensor<4xf32>) do not match the inputs of @ccompiler_0 (tensor<4xf32>)

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = extern.call @nothere(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: verify_invalid.mlir:56:3: error: 'extern.call': callee @nothere is not defined in the module

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = extern.call @main(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: verify_invalid.mlir:64:3: error: 'extern.call': callee @main is not an outlined function

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = extern.call @ccompiler_0(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func private @ccompiler_0(%0: tensor<4xf32>) -> tensor<4xf32> attributes {extern.compiler = "ccompiler"} {
  %1 = extern.call @ccompiler_1(%0) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func private @ccompiler_1(%0: tensor<4xf32>) -> tensor<4xf32> attributes {extern.compiler = "ccompiler"} {
  %1 = extern.call @ccompiler_0(%0) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
// CHECK: verify_invalid.mlir:80:3: error: 'extern.call': recursive call (@ccompiler_0 -> @ccompiler_1 -> @ccompiler_0)

// -----

func.func @main(%a: tensor<4xf32>) {
  func.return
}
// CHECK: verify_invalid.mlir:87:1: error: 'func.func': @main returns nothing; a model must return at least one value

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.reshape %a {newshape = array<i64: 4611686018427387904>} : (tensor<4xf32>) -> tensor<4611686018427387904xf32>
  func.return %a : tensor<4xf32>
}
// CHECK: verify_invalid.mlir:95:3: error: 'relay.reshape': result 0: tensor<4611686018427387904xf32> would need at least 18446744073709551616 bytes (dimension 0, of size 4611686018427387904, takes it past the limit of 140737488355328 bytes for one buffer

// -----

func.func @main(%a: tensor<3037000500x3037000500xf32>) -> tensor<4xf32> {
  %0 = relay.constant dense<1.0> : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: verify_invalid.mlir:102:1: error: 'func.func': block argument 0: tensor<3037000500x3037000500xf32> has more elements than the 64-bit index type holds (dimension 1, of size 3037000500, takes it past 2^63-1)
