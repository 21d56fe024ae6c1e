// The real pg, aliased by the bundler so our wrapper (pg-shim.ts) can stand in for 'pg'.
declare module 'pg-real' {
  export * from 'pg';
  import pg from 'pg';
  export default pg;
}
