//! ferry-filters: tower layers usable on their own, like tower-http.
