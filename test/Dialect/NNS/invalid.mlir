// RUN: nns-opt %s -split-input-file -verify-diagnostics

nns.trace @bad_accessor {
  // expected-error @+1 {{'nns.site.read' op site 'model.layers.8.outptu' has accessor 'outptu'; expected 'output' or 'input'}}
  %h = nns.site.read "model.layers.8.outptu" : tensor<?x576xf32>
}

// -----

nns.trace @not_a_path {
  // expected-error @+1 {{'nns.site.read' op site 'embed' is not a dotted module path ending in an accessor}}
  %h = nns.site.read "embed" : tensor<?x576xf32>
}

// -----

nns.trace @empty_component {
  // expected-error @+1 {{'nns.site.read' op site 'model..output' is not a dotted module path ending in an accessor}}
  %h = nns.site.read "model..output" : tensor<?x576xf32>
}

// -----

nns.trace @empty_save_name {
  %h = nns.site.read "lm_head.output" : tensor<?x49152xf32>
  // expected-error @+1 {{'nns.save' op save name must not be empty}}
  nns.save "", %h : tensor<?x49152xf32>
}
