// RUN: byoc-opt %s -p byoc-fold-scale-shift --split-input-file | filecheck %s

// Batch norm as DenseNet and Inception v2 import it (Unsqueeze -> Mul -> Add
// after the conv): the multiply scales the weight's rows, the add becomes
// the bias; the relu after them stays.
func.func @conv_mul_add_relu(%x: tensor<1x1x3x5xf32>) -> tensor<1x2x3x5xf32> {
  %w = relay.constant dense<[[[[1.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %s = relay.constant dense<[[[2.0]], [[-1.0]]]> : tensor<2x1x1xf32>
  %t = relay.constant dense<[[[[0.5]], [[0.25]]]]> : tensor<1x2x1x1xf32>
  %0 = relay.nn.conv2d %x, %w : (tensor<1x1x3x5xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %1 = relay.multiply %0, %s : (tensor<1x2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x5xf32>
  %2 = relay.add %t, %1 : (tensor<1x2x1x1xf32>, tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %3 = relay.nn.relu %2 : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  func.return %3 : tensor<1x2x3x5xf32>
}

// CHECK-LABEL: func.func @conv_mul_add_relu(%x: tensor<1x1x3x5xf32>) -> tensor<1x2x3x5xf32> {
// CHECK-NEXT:    %w = relay.constant dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}-3.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %[[C:.*]] = relay.nn.conv2d %x, %w
// CHECK-NEXT:    %[[B:.*]] = relay.constant dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = relay.nn.bias_add %[[C]], %[[B]] : (tensor<1x2x3x5xf32>, tensor<2xf32>) -> tensor<1x2x3x5xf32>
// CHECK-NEXT:    %[[R:.*]] = relay.nn.relu %[[Y]]
// CHECK-NEXT:    func.return %[[R]]

// -----

// After a bias_add: subtract shifts the bias, divide scales weight and bias;
// a scalar constant applies to every channel.
func.func @bias_sub_div(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = relay.constant dense<1.0> : tensor<2x4xf32>
  %b = relay.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %t = relay.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %d = relay.constant dense<2.0> : tensor<f32>
  %0 = relay.nn.dense %x, %w : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %2 = relay.subtract %1, %t : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %3 = relay.divide %2, %d : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  func.return %3 : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @bias_sub_div(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
// CHECK-NEXT:    %w = relay.constant dense<5.000000e-01> : tensor<2x4xf32>
// CHECK-NEXT:    %[[D:.*]] = relay.nn.dense %x, %w
// CHECK-NEXT:    %b = relay.constant dense<[0.000000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = relay.nn.bias_add %[[D]], %b
// CHECK-NEXT:    func.return %[[Y]]

// -----

// Not folded: a constant that varies along another axis; a product whose
// output has another user; a weight that is not a constant; a constant on
// the left of a subtraction; a division by zero.
func.func @kept(%x: tensor<1x1x3x5xf32>, %v: tensor<2x1x1x1xf32>) -> (tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>) {
  %w = relay.constant dense<1.0> : tensor<2x1x1x1xf32>
  %rows = relay.constant dense<[[1.0], [2.0], [3.0]]> : tensor<3x1xf32>
  %s = relay.constant dense<[[[2.0]], [[0.0]]]> : tensor<2x1x1xf32>
  %0 = relay.nn.conv2d %x, %w : (tensor<1x1x3x5xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %1 = relay.multiply %0, %rows : (tensor<1x2x3x5xf32>, tensor<3x1xf32>) -> tensor<1x2x3x5xf32>
  %2 = relay.nn.conv2d %x, %w : (tensor<1x1x3x5xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %3 = relay.multiply %2, %s : (tensor<1x2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x5xf32>
  %4 = relay.nn.conv2d %x, %v : (tensor<1x1x3x5xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %5 = relay.multiply %4, %s : (tensor<1x2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x5xf32>
  %6 = relay.nn.conv2d %x, %w : (tensor<1x1x3x5xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %7 = relay.subtract %s, %6 : (tensor<2x1x1xf32>, tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %8 = relay.nn.conv2d %x, %w : (tensor<1x1x3x5xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %9 = relay.divide %8, %s : (tensor<1x2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x5xf32>
  func.return %1, %2, %3, %5, %7, %9 : tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK:         relay.multiply %{{.*}}, %rows
// CHECK:         %[[C:.*]] = relay.nn.conv2d %x, %w
// CHECK-NEXT:    relay.multiply %[[C]], %s
// CHECK:         relay.multiply %{{.*}}, %s
// CHECK:         relay.subtract %s, %{{.*}}
// CHECK:         relay.divide %{{.*}}, %s
// CHECK-NOT:     relay.nn.bias_add
