// The bundler maps 'platformatic-real' to the real @platformatic/kafka; the shim then takes its name.
declare module 'platformatic-real' {
  export * from '@platformatic/kafka';
}
