// RUN: byoc-opt %s --annotate | filecheck %s
// RUN: byoc-opt %s -p 'byoc-annotate{targets=ccompiler}' | filecheck %s

// Supported ops get the backend's name; tanh and exp stay on the host.
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    relay.add %a, %b {extern.target = "ccompiler"}
// CHECK-NEXT:    relay.tanh %{{.*}} :
// CHECK-NEXT:    relay.multiply %{{.*}}, %a {extern.target = "ccompiler"}
// CHECK-NEXT:    relay.exp %{{.*}} :
// CHECK-NEXT:    relay.nn.relu %{{.*}} {extern.target = "ccompiler"}
// CHECK-NEXT:    func.return
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = relay.tanh %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = relay.multiply %1, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = relay.exp %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = relay.nn.relu %3 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %4 : tensor<2x3xf32>
}
