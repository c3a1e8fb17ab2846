pub mod rest;
pub mod user;
