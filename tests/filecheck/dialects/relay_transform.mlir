// RUN: byoc-opt %s | filecheck %s
// RUN: byoc-opt %s --print-op-generic | byoc-opt | filecheck %s
// RUN: byoc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The data-movement ops of relay.TRANSFORM_OPS in their custom form (default
// attributes left out) and generic form (every default filled in).

// CHECK-LABEL: func.func @take(
// CHECK-NEXT:    %0 = relay.take %t, %ids {axis = 0 : i64, mode = "fast"} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %1 = relay.take %t, %ids32 {axis = -1 : i64, mode = "wrap"} : (tensor<10x4xf32>, tensor<5xi32>) -> tensor<10x5xf32>
// CHECK-NEXT:    %2 = relay.take %t, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = relay.take %k, %ids32 {axis = 0 : i64} : (tensor<3xi64>, tensor<5xi32>) -> tensor<5xi64>
// GENERIC-LABEL: sym_name = "take"
// GENERIC:       "relay.take"(%t, %ids) <{axis = 0 : i64, batch_dims = 0 : i64, mode = "fast"}>
// GENERIC:       "relay.take"(%t, %ids32) <{axis = -1 : i64, batch_dims = 0 : i64, mode = "wrap"}>
// GENERIC:       "relay.take"(%t, %ids) <{batch_dims = 0 : i64, mode = "clip"}>
func.func @take(%t: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %ids32: tensor<5xi32>, %k: tensor<3xi64>) -> (tensor<2x3x4xf32>, tensor<10x5xf32>, tensor<2x3xf32>, tensor<5xi64>) {
  %0 = relay.take %t, %ids {axis = 0 : i64, mode = "fast"} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %1 = relay.take %t, %ids32 {axis = -1 : i64, mode = "wrap"} : (tensor<10x4xf32>, tensor<5xi32>) -> tensor<10x5xf32>
  %2 = relay.take %t, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  %3 = relay.take %k, %ids32 {axis = 0 : i64} : (tensor<3xi64>, tensor<5xi32>) -> tensor<5xi64>
  func.return %0, %1, %2, %3 : tensor<2x3x4xf32>, tensor<10x5xf32>, tensor<2x3xf32>, tensor<5xi64>
}

// The copying ops take integer tensors too.
// CHECK-LABEL: func.func @integers(
// CHECK-NEXT:    %0 = relay.transpose %a : (tensor<2x3xi64>) -> tensor<3x2xi64>
// CHECK-NEXT:    %1 = relay.reshape %b {newshape = array<i64: 6>} : (tensor<3x2xi1>) -> tensor<6xi1>
// CHECK-NEXT:    %2 = relay.concatenate %c, %c : (tensor<2x2xui8>, tensor<2x2xui8>) -> tensor<4x2xui8>
// CHECK-NEXT:    %3 = relay.constant dense<[1, -2]> : tensor<2xi32>
func.func @integers(%a: tensor<2x3xi64>, %b: tensor<3x2xi1>, %c: tensor<2x2xui8>) -> (tensor<3x2xi64>, tensor<6xi1>, tensor<4x2xui8>, tensor<2xi32>) {
  %0 = relay.transpose %a : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %1 = relay.reshape %b {newshape = array<i64: 6>} : (tensor<3x2xi1>) -> tensor<6xi1>
  %2 = relay.concatenate %c, %c : (tensor<2x2xui8>, tensor<2x2xui8>) -> tensor<4x2xui8>
  %3 = relay.constant dense<[1, -2]> : tensor<2xi32>
  func.return %0, %1, %2, %3 : tensor<3x2xi64>, tensor<6xi1>, tensor<4x2xui8>, tensor<2xi32>
}
