// RUN: byoc-opt %s -p byoc-fuse-gelu --split-input-file | filecheck %s

// The erf GELU as torch.onnx exports it: x * (1 + erf(x / sqrt(2))) * 0.5.
func.func @pytorch(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %sqrt2 = relay.constant dense<1.41421354> : tensor<f32>
  %one = relay.constant dense<1.0> : tensor<f32>
  %half = relay.constant dense<0.5> : tensor<f32>
  %0 = relay.divide %x, %sqrt2 : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  %1 = relay.erf %0 : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %2 = relay.add %1, %one : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  %3 = relay.multiply %x, %2 : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %4 = relay.multiply %3, %half : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  func.return %4 : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @pytorch(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
// CHECK-NEXT:    %[[G:.*]] = relay.nn.gelu %x : (tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:    func.return %[[G]]
// CHECK-NEXT:  }

// -----

// Other orders: (x * 0.5) * (1 + erf(x * 0.70710678)), the 1 on the left.
func.func @reordered(%x: tensor<3xf32>) -> tensor<3xf32> {
  %rsqrt2 = relay.constant dense<0.707106769> : tensor<1xf32>
  %one = relay.constant dense<1.0> : tensor<1xf32>
  %half = relay.constant dense<0.5> : tensor<f32>
  %0 = relay.multiply %rsqrt2, %x : (tensor<1xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = relay.erf %0 : (tensor<3xf32>) -> tensor<3xf32>
  %2 = relay.add %one, %1 : (tensor<1xf32>, tensor<3xf32>) -> tensor<3xf32>
  %3 = relay.multiply %half, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = relay.multiply %3, %2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %4 : tensor<3xf32>
}

// CHECK-LABEL: func.func @reordered
// CHECK-NEXT:    %[[G:.*]] = relay.nn.gelu %x
// CHECK-NEXT:    func.return %[[G]]

// -----

// Not a GELU: another constant; an intermediate value used elsewhere; erf
// of another value.
func.func @kept(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %sqrt2 = relay.constant dense<1.41421354> : tensor<f32>
  %one = relay.constant dense<1.0> : tensor<f32>
  %half = relay.constant dense<0.5> : tensor<f32>
  %third = relay.constant dense<0.333> : tensor<f32>
  %0 = relay.divide %x, %sqrt2 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %1 = relay.erf %0 : (tensor<3xf32>) -> tensor<3xf32>
  %2 = relay.add %1, %one : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %3 = relay.multiply %x, %2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = relay.multiply %3, %third : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %5 = relay.divide %x, %sqrt2 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %6 = relay.erf %5 : (tensor<3xf32>) -> tensor<3xf32>
  %7 = relay.add %6, %one : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %8 = relay.multiply %x, %7 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %9 = relay.multiply %8, %half : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %10 = relay.divide %y, %sqrt2 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %11 = relay.erf %10 : (tensor<3xf32>) -> tensor<3xf32>
  %12 = relay.add %11, %one : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %13 = relay.multiply %x, %12 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %14 = relay.multiply %13, %half : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %4, %9, %6, %14 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK-NOT:     relay.nn.gelu
